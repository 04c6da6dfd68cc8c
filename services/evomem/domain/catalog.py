"""What well-known infrastructure products are: a small catalogue of world knowledge.

"From here on the webhook relay runs on CBOR" names the component but not the aspect. When
the memory holds the relay's serialization format *and* its login provider, only knowing
that CBOR is a serialization format tells which decision the note replaces. An LLM knows
that; the scored linker (``evomem.domain.linkers.scored.ScoredLinker``) reads it here.

The catalogue maps a product's name to the concepts of ``evomem.domain.subject_words.CONCEPTS``
(``@database``, ``@queue``, ...). It is general knowledge of the field, written from what
the products are, not from any data set, and deliberately broad (open source and hosted,
old and new). A product that serves several purposes lists each (Redis is a cache, a
database and a queue), so a note choosing it is never read as one aspect only.

How the linker uses it: a note's option gets its kinds from, in this order, what the memory
itself says (the decisions that name the option), what the option's own name says ("Redis
*Streams*", "GitLab *CI*"), then this catalogue. So a memory that uses a product for
something the catalogue does not list is believed over the catalogue, and an unknown name
simply has no kind (the linker then abstains where the aspect is ambiguous, as before).
"""

from __future__ import annotations

import re

#: concept -> product names, as commonly written (matching ignores case and spacing).
# fmt: off
PRODUCTS: dict[str, tuple[str, ...]] = {
    "@database": (
        "Postgres", "PostgreSQL", "MySQL", "MariaDB", "SQLite", "Oracle Database", "SQL Server", "MSSQL",
        "CockroachDB", "YugabyteDB", "TiDB", "Spanner", "Cloud SQL", "Aurora", "RDS", "DynamoDB",
        "MongoDB", "Couchbase", "CouchDB", "Cassandra", "ScyllaDB", "HBase", "Neo4j", "ArangoDB",
        "FaunaDB", "Firestore", "Firebase", "Supabase", "PlanetScale", "Neon", "Cosmos DB", "CosmosDB",
        "DuckDB", "ClickHouse", "Snowflake", "BigQuery", "Redshift", "TimescaleDB", "InfluxDB", "QuestDB",
        "RethinkDB", "FoundationDB", "etcd", "LevelDB", "RocksDB", "SurrealDB", "EdgeDB", "Vitess",
        "Redis", "KeyDB", "Dragonfly", "Valkey", "Aerospike", "Riak",
    ),
    "@queue": (
        "Kafka", "Apache Kafka", "Redpanda", "RabbitMQ", "NATS", "NATS JetStream", "JetStream", "SQS",
        "Amazon SQS", "SNS", "Pulsar", "Apache Pulsar", "Redis Streams", "Kinesis", "EventBridge",
        "Google Pub/Sub", "Pub/Sub", "Azure Service Bus", "Service Bus", "Event Hubs", "ActiveMQ",
        "ZeroMQ", "NSQ", "Beanstalkd", "Celery", "Sidekiq", "BullMQ", "Resque", "RQ",
        "Amazon MQ", "IBM MQ", "Solace", "Mosquitto", "EMQX", "Redis",
    ),
    "@cache": (
        "Redis", "Memcached", "Varnish", "Hazelcast", "KeyDB", "Dragonfly", "Valkey", "ElastiCache",
        "Memorystore", "Ehcache", "Caffeine", "Ignite", "Apache Ignite", "Aerospike", "Squid", "Nginx cache",
        "Fastly", "Cloudflare", "CloudFront", "Akamai",
    ),
    "@ci": (
        "GitHub Actions", "GitLab CI", "Jenkins", "CircleCI", "Buildkite", "Drone", "Travis", "Travis CI",
        "TeamCity", "Bamboo", "Azure Pipelines", "Azure DevOps", "Bitbucket Pipelines", "Cloud Build",
        "CodeBuild", "CodePipeline", "Concourse", "Tekton", "Argo Workflows", "Woodpecker", "Semaphore",
        "AppVeyor", "Bazel", "Earthly", "Dagger", "Harness", "Spinnaker", "Argo CD", "ArgoCD", "Flux",
    ),
    "@hosting": (
        "Kubernetes", "K8s", "Nomad", "ECS", "EKS", "GKE", "AKS", "Fargate", "Fly.io", "Fly", "Cloud Run",
        "Heroku", "Render", "Railway", "Vercel", "Netlify", "App Engine", "Elastic Beanstalk", "Lambda",
        "AWS Lambda", "Cloud Functions", "Azure Functions", "OpenShift", "Docker Swarm", "Swarm", "Mesos",
        "Marathon", "EC2", "Compute Engine", "DigitalOcean", "App Platform", "Linode", "Hetzner", "Lightsail",
        "Cloudflare Workers", "Knative", "k3s", "Rancher", "Deno Deploy",
    ),
    "@auth": (
        "Auth0", "Keycloak", "Cognito", "Okta", "Ory Kratos", "Ory", "Kratos", "Firebase Auth", "Azure AD",
        "Entra ID", "Microsoft Entra", "Google Identity", "Clerk", "Supertokens", "SuperTokens", "FusionAuth",
        "Authentik", "Authelia", "Dex", "Gluu", "OneLogin", "Ping Identity", "PingFederate", "Stytch",
        "WorkOS", "Descope", "Zitadel", "Hydra", "Ory Hydra", "Passport", "NextAuth", "Auth.js", "LDAP",
        "Active Directory", "OAuth", "OIDC", "SAML",
    ),
    "@search": (
        "Elasticsearch", "OpenSearch", "Meilisearch", "Typesense", "Solr", "Apache Solr", "Algolia",
        "Vespa", "Sphinx", "Manticore", "Manticore Search", "Tantivy", "Quickwit", "Zinc", "ZincSearch",
        "Bleve", "Lucene", "Azure Cognitive Search", "CloudSearch", "Coveo", "Sonic", "Weaviate", "Qdrant",
        "Milvus", "Pinecone", "pgvector",
    ),
    "@objectstore": (
        "S3", "Amazon S3", "GCS", "Google Cloud Storage", "Cloud Storage", "MinIO", "Azure Blob",
        "Azure Blob Storage", "Blob Storage", "Backblaze B2", "Backblaze", "B2", "Wasabi", "R2",
        "Cloudflare R2", "Ceph", "SeaweedFS", "Swift", "OpenStack Swift", "DigitalOcean Spaces", "Spaces",
        "GlusterFS", "HDFS", "Garage",
    ),
    "@flags": (
        "LaunchDarkly", "Unleash", "Flagsmith", "ConfigCat", "GrowthBook", "Split", "Split.io", "Optimizely",
        "Statsig", "Flipt", "Flagd", "OpenFeature", "DevCycle", "PostHog", "Harness Feature Flags",
        "AppConfig", "Firebase Remote Config", "Remote Config", "Eppo", "Flipper",
    ),
    "@scheduler": (
        "cron", "crontab", "Airflow", "Apache Airflow", "Prefect", "Dagster", "Temporal", "Luigi",
        "Argo Workflows", "Kestra", "Mage", "Oozie", "Azkaban", "Rundeck", "Cadence", "Conductor",
        "Step Functions", "Cloud Scheduler", "Cloud Composer", "MWAA", "Celery Beat", "Quartz",
        "Hangfire", "systemd timers", "Windmill", "Inngest", "Trigger.dev",
    ),
    "@monitoring": (
        "Prometheus", "Datadog", "Dynatrace", "VictoriaMetrics", "Honeycomb", "Grafana", "Grafana Cloud",
        "Mimir", "Thanos", "Cortex", "New Relic", "NewRelic", "AppDynamics", "Splunk", "Elastic APM",
        "CloudWatch", "Stackdriver", "Cloud Monitoring", "Azure Monitor", "Zabbix", "Nagios", "Icinga",
        "Graphite", "StatsD", "InfluxDB", "Telegraf", "Sentry", "Lightstep", "Chronosphere", "SigNoz",
        "Jaeger", "Zipkin", "Tempo", "OpenTelemetry", "Netdata", "Checkmk", "Instana", "Uptrace",
    ),
    "@email": (
        "SendGrid", "Mailgun", "SES", "Amazon SES", "Postmark", "Resend", "Mailchimp", "Mandrill",
        "SparkPost", "Mailjet", "Brevo", "Sendinblue", "Loops", "Customer.io", "MailerSend", "Elastic Email",
        "Postfix", "Exim", "Sendmail", "Gmail", "Google Workspace", "Microsoft 365", "Office 365",
        "Mailtrap", "SMTP2GO",
    ),
    "@format": (
        "JSON", "Protobuf", "Protocol Buffers", "MessagePack", "msgpack", "Avro", "Apache Avro", "CBOR",
        "Thrift", "Apache Thrift", "FlatBuffers", "Cap'n Proto", "Capn Proto", "BSON", "XML", "YAML", "TOML",
        "CSV", "Parquet", "ORC", "Arrow", "Apache Arrow", "Ion", "Amazon Ion", "Smile", "UBJSON", "Bincode",
        "SBE", "ASN.1", "JSON Lines", "NDJSON", "gRPC",
    ),
    "@secrets": (
        "Vault", "HashiCorp Vault", "AWS Secrets Manager", "Secrets Manager", "Doppler", "SOPS", "Infisical",
        "Azure Key Vault", "Key Vault", "Google Secret Manager", "Secret Manager", "GCP Secret Manager",
        "1Password", "1Password Connect", "Bitwarden", "Bitwarden Secrets Manager", "CyberArk", "Conjur",
        "Akeyless", "Keeper", "SSM Parameter Store", "Parameter Store", "Sealed Secrets", "External Secrets",
        "git-crypt", "Berglas", "Knox", "Keywhiz", "Chamber", "Teller", "EnvKey",
    ),
}
# fmt: on

_SPACE = re.compile(r"\s+")
_VERSION_TAIL = re.compile(r"\s+v?\d+(?:\.\d+)*$", re.I)


def _key(name: str) -> str:
    return _SPACE.sub(" ", name.strip().lower())


_KINDS: dict[str, frozenset[str]] = {}
for _concept, _names in PRODUCTS.items():
    for _name in _names:
        _KINDS[_key(_name)] = _KINDS.get(_key(_name), frozenset()) | {_concept}


def product_kinds(name: str) -> frozenset[str]:
    """The concepts a well-known product serves ("CBOR" -> {"@format"}); empty when unknown.

    Case and spacing do not matter, and a version after the name is ignored ("Postgres 16")."""
    key = _key(name)
    kinds = _KINDS.get(key)
    if kinds is None:
        kinds = _KINDS.get(_VERSION_TAIL.sub("", key), frozenset())
    return kinds
