"""check: rules of helper premise21 (issue 33's premise check): words joined by hyphens to a number
("us-east-1", "eu-central-1") are one name, each of whose letter parts tells it from another of the
same shape, a stopword's letters too: "us" in "us-east-1" is no pronoun, and read without it
"us-east-1" was only "east" and "1", all of which "eu-east-1" holds."""

from __future__ import annotations

from evomem.domain.premise_words import named_words, words_of


def test_a_hyphened_name_keeps_every_letter_part() -> None:
    assert named_words("The cairn hosting region uses AWS us-east-1.") == {"aws", "us", "east", "1"}
    assert named_words("The cloud acct dev region uses eu-central-1.") == {"eu", "central", "1"}
    assert not named_words("The region uses us-east-1.") <= words_of("Dev stays in eu-east-1")
    assert "us" not in words_of("Tell us by Friday")  # a stopword outside such a name is still one
