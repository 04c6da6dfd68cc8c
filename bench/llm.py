"""The llm linker (``--auto-supersede llm``) on the quality sets, against a local llama.cpp server.

    python -m bench.llm --out bench/results/llm                       # the tiny random-weights GGUF
    python -m bench.llm --model your-model.gguf --out bench/results/llm-real
    python -m bench.llm --base-url http://127.0.0.1:8080/v1 --model-name M --out ...   # a running server

It starts ``python -m llama_cpp.server`` on a free loopback port with the model (by default the
tiny GGUF that ``scripts/make_tiny_gguf.py`` writes, ~1.8 MB), runs ``bench.quality`` with
``evomem-auto:llm`` (the LLM behind the pair linker, asked whenever the pair linker is
unsure about a plausible candidate) next to ``evomem-auto:pair``, and stops the server.
``make bench-llm`` runs it with the tiny model.

With the tiny model the answers are random: its tables measure the protocol's cost (how many
remembers call the model, and the time of those calls with a model that answers in a few ms),
never quality. With a real model the same command measures quality too. Needs
``llama-cpp-python[server]`` and ``gguf`` (``make test`` installs both).
"""

from __future__ import annotations

import argparse
import importlib.util
import sys
import tempfile
from pathlib import Path

from bench.procs import LlamaServer, make_tiny_model
from bench.quality import main as quality_main


def main(argv: list[str] | None = None) -> int:
    ap = argparse.ArgumentParser(prog="python -m bench.llm", description=__doc__.split("\n\n")[0])
    ap.add_argument("--out", default="bench/results/llm", help="folder for the quality report of this run")
    ap.add_argument("--model", default="", help="a GGUF file to serve (default: the tiny random-weights model)")
    ap.add_argument("--base-url", default="", help="use this running OpenAI-compatible server instead (…/v1)")
    ap.add_argument("--model-name", default="tiny", help="the model's name at --base-url")
    ap.add_argument("--sets", default="odr,vdr", help="quality sets to run (see bench.quality)")
    ap.add_argument("--limit", type=int, default=0, help="only the first N scenarios of each set")
    ap.add_argument("--no-progress", action="store_true", help="no progress bars")
    args = ap.parse_args(argv)
    rest = ["--out", args.out, "--sets", args.sets, "--linkers", "pair", "--no-confirm"]
    rest += ["--memories", "evomem-auto:pair,evomem-auto:llm"]
    rest += ["--limit", str(args.limit)] if args.limit else []
    rest += ["--no-progress"] if args.no_progress else []
    if args.base_url:
        return quality_main([*rest, "--llm-model", args.model_name, "--llm-base-url", args.base_url])
    if importlib.util.find_spec("llama_cpp") is None:
        print(
            "error: llama_cpp is not installed; `make test` installs it, or: "
            "CMAKE_ARGS=\"-DGGML_NATIVE=OFF\" pip install 'llama-cpp-python[server]==0.3.36' gguf",
            file=sys.stderr,
        )
        return 2
    with tempfile.TemporaryDirectory(prefix="evomem-llm-") as tmp:
        model = Path(args.model) if args.model else make_tiny_model(Path(tmp))
        server = LlamaServer(model, Path(tmp)).start()
        try:
            print(f"llama.cpp server on {server.base_url} serving {model.name}", file=sys.stderr)
            return quality_main([*rest, "--llm-model", "tiny", "--llm-base-url", server.base_url])
        finally:
            server.stop()


if __name__ == "__main__":
    sys.exit(main())
