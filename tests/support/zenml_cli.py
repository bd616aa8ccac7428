"""``zenml(*args)``: one command of the unmodified ``zenml`` CLI, for the snippets that
:func:`tests.support.zenml_env.run_snippet` runs in the client's own interpreter (this
file is part of their prelude; the tests' interpreter never imports it).

Each command is a process of its own, as when a user types it, so no state a command
leaves in memory reaches the next: the snippet's process imports the CLI once and forks a
child per command, which runs it and exits. A new interpreter per command would import
zenml again, ~4 s of CPU a command. The fork is taken only while this process has made
no ``Client`` or global configuration (checked), so each command reads the configuration
from disk, as a new process does. Output is the command's stdout and stderr together;
``input`` is its stdin (empty if None).
"""

import os as _cli_os
import select as _cli_select
import signal as _cli_signal
import sys as _cli_sys
import time as _cli_time


def zenml(*args, input=None, timeout=180):
    from zenml.cli.cli import cli
    from zenml.client import Client
    from zenml.config.global_config import GlobalConfiguration

    if GlobalConfiguration.get_instance() is not None or Client._global_client is not None:
        raise RuntimeError("zenml(): this process has a client; a fork would share its state")
    _cli_sys.stdout.flush()
    _cli_sys.stderr.flush()
    out_read, out_write = _cli_os.pipe()
    in_read, in_write = _cli_os.pipe()
    pid = _cli_os.fork()
    if pid == 0:  # the command's process
        code = 1
        try:
            _cli_os.close(out_read)
            _cli_os.close(in_write)
            _cli_os.dup2(in_read, 0)
            _cli_os.dup2(out_write, 1)
            _cli_os.dup2(out_write, 2)
            _cli_signal.alarm(int(timeout))
            cli.main(args=list(args), prog_name="zenml", standalone_mode=True)
            code = 0
        except SystemExit as exit_:
            code = exit_.code if isinstance(exit_.code, int) else (0 if exit_.code is None else 1)
        except BaseException:
            import traceback

            traceback.print_exc()
        finally:
            _cli_sys.stdout.flush()
            _cli_sys.stderr.flush()
            _cli_os._exit(code)
    _cli_os.close(out_write)
    _cli_os.close(in_read)
    _cli_os.write(in_write, (input or "").encode())
    _cli_os.close(in_write)
    chunks = []
    deadline = _cli_time.monotonic() + timeout + 5
    while _cli_time.monotonic() < deadline:
        ready, _, _ = _cli_select.select([out_read], [], [], 1.0)
        if ready:
            chunk = _cli_os.read(out_read, 65536)
            if not chunk:
                break
            chunks.append(chunk)
    else:
        _cli_os.kill(pid, _cli_signal.SIGKILL)
    _cli_os.close(out_read)
    _, status = _cli_os.waitpid(pid, 0)
    return {
        "code": _cli_os.waitstatus_to_exitcode(status),
        "out": b"".join(chunks).decode(errors="replace"),
    }
