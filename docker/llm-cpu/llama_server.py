"""The llama.cpp server's command line and /health, served by llama-cpp-python on the CPU.

    llama_server.py --model /models/linker.gguf --alias linker --host 0.0.0.0 --port 8080 \\
        [--n-gpu-layers N] [--ctx-size N] [--threads N]

The entrypoint of the evomem-llm-cpu stand-in image (compose.gpu-standin.yaml): it takes the
flags compose.gpu.yaml gives the official llama.cpp server, serves the same OpenAI-compatible
API (``/v1/chat/completions``, ``/v1/models``, with ``grammar``) through ``llama_cpp.server``,
and answers ``GET /health`` with 200 once the model is loaded (the model loads before the
socket listens, so there is no 503 phase). ``--n-gpu-layers`` is accepted and ignored: this
build is CPU-only.
"""

from __future__ import annotations

import argparse
import os


def main(argv: list[str] | None = None) -> None:
    parser = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("-m", "--model", required=True)
    parser.add_argument("-a", "--alias")
    parser.add_argument("--host", default="127.0.0.1")
    parser.add_argument("--port", type=int, default=8080)
    parser.add_argument("-ngl", "--n-gpu-layers", "--gpu-layers", type=int, default=0)
    parser.add_argument("-c", "--ctx-size", type=int, default=4096)
    parser.add_argument("-t", "--threads", type=int, default=min(4, os.cpu_count() or 1))
    args = parser.parse_args(argv)

    import uvicorn
    from llama_cpp.server.app import create_app
    from llama_cpp.server.settings import ModelSettings, ServerSettings

    model = ModelSettings(
        model=args.model,
        model_alias=args.alias,
        n_gpu_layers=0,
        n_ctx=args.ctx_size,
        n_threads=args.threads,
        n_threads_batch=args.threads,
        verbose=False,
    )
    app = create_app(server_settings=ServerSettings(host=args.host, port=args.port), model_settings=[model])

    @app.get("/health")
    def health() -> dict[str, str]:
        return {"status": "ok"}

    uvicorn.run(app, host=args.host, port=args.port, log_level="warning")


if __name__ == "__main__":
    main()
