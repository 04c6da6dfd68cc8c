"""SIGTERM stops a served process whichever of its threads the kernel hands the signal to.

Real processes and real signals: each case runs ``runtime.serve_until_signal`` in a fresh
interpreter (signal handlers belong to a process's main thread) and checks it stops cleanly.
"""

from __future__ import annotations

import subprocess
import sys
import textwrap
import time

SCRIPT = textwrap.dedent(
    """
    import os, signal, sys, threading, time
    from evomem.ops.runtime import serve_until_signal

    case = sys.argv[1]

    def start():
        if case == "during-start":
            os.kill(os.getpid(), signal.SIGTERM)  # arrives before start returns
            time.sleep(0.2)
        elif case == "other-thread":
            def busy():  # a thread of the service (gRPC's, onnxruntime's) that receives SIGTERM
                time.sleep(0.3)
                signal.pthread_kill(threading.get_ident(), signal.SIGTERM)
                time.sleep(60)
            threading.Thread(target=busy, daemon=True).start()
        print("started", flush=True)

    serve_until_signal(start, lambda: print("stopped", flush=True))
    """
)


def _run(case: str) -> tuple[subprocess.CompletedProcess[str], float]:
    started = time.monotonic()
    done = subprocess.run([sys.executable, "-c", SCRIPT, case], capture_output=True, text=True, timeout=30)
    return done, time.monotonic() - started


def test_sigterm_received_by_another_thread_stops_the_service() -> None:
    # Before the fix the main thread sat in an unbounded Event.wait(); a SIGTERM the kernel gave
    # to another thread was flagged but never handled, and the process ran until killed.
    done, took = _run("other-thread")
    assert done.returncode == 0, done.stderr
    assert done.stdout.split() == ["started", "stopped"]
    assert took < 10


def test_sigterm_during_start_is_a_clean_stop_not_the_default_exit() -> None:
    done, _ = _run("during-start")
    assert done.returncode == 0, done.stderr  # Python's default action would be -15
    assert done.stdout.split() == ["started", "stopped"]
