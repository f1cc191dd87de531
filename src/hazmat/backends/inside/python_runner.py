
import os, signal, sys
signal.pthread_sigmask(signal.SIG_BLOCK, {signal.SIGUSR2})
from .preload import _hazmat_preload  # @PRELOAD@
_hazmat_preload()
del _hazmat_preload
import json  # the job's env, args and displays come as JSON: its import (10 ms) paid now
import gc
import importlib.machinery, types  # what _hazmat_prepare uses, imported before the job
import _ast  # and the AST's types, which the first parse builds (1-2 ms)
compile("0", "<hazmat>", "exec", 0x400)
def _hazmat_c_exit():
    # libc's exit(), for the program's end (_hazmat_exit): ctypes' import (3 ms) paid now
    try:
        import ctypes
        c_exit = ctypes.CDLL(None).exit
        c_exit.argtypes = [ctypes.c_int]
        return c_exit
    except Exception:
        return None
_hazmat_libc_exit = _hazmat_c_exit() or os._exit
del _hazmat_c_exit
# Everything so far is the runner's and the image's warm-up, none of it the program's: the
# collector leaves it alone from here on, so the program's end collects only its own objects.
gc.freeze()
# on stdout, or (started ahead by a session's agent) on a channel of the agent's own
_hazmat_ready = int(os.environ.get("HAZMAT_READY_FD", "1"))
os.write(_hazmat_ready, b"hazmat-ready\n")
if _hazmat_ready != 1:
    os.close(_hazmat_ready)
del _hazmat_ready
signal.sigwait({signal.SIGUSR2})
signal.pthread_sigmask(signal.SIG_UNBLOCK, {signal.SIGUSR2})
# started ahead, the call's stdin is a file the unpack script wrote once the call came: fd 0
if os.environ.get("HAZMAT_STDIN_FILE"):
    try:
        _hazmat_stdin = os.open(os.environ["HAZMAT_STDIN_FILE"], os.O_RDONLY)
    except OSError:
        os.write(2, b"hazmat-agent: cannot open the call's stdin\n")
        os._exit(125)
    if _hazmat_stdin != 0:
        os.dup2(_hazmat_stdin, 0)
        os.close(_hazmat_stdin)
    del _hazmat_stdin
def _hazmat_unpack():
    # the rest of the job, as the agent's stage script would read it (backends/agent/single.py)
    def die(why):
        os.write(2, b"hazmat-agent: " + why + b"\n")
        os._exit(125)
    def line():
        got = bytearray()
        while True:
            byte = os.read(0, 1)
            if not byte:
                die(b"truncated job")
            if byte == b"\n":
                return bytes(got)
            got += byte
    def exactly(left, out=None):
        got = []
        while left:
            chunk = os.read(0, min(left, 65536))
            if not chunk:
                die(b"truncated job")
            if out is None:
                got.append(chunk)
            else:
                out.write(chunk)
            left -= len(chunk)
        return b"".join(got)
    def number(field):
        if not field.isdigit() or not field.isascii():
            die(b"unknown job format")
        return int(field)
    sizes = line().split(b" ")
    if len(sizes) != 2:
        die(b"unknown job format")
    job = exactly(number(sizes[0]))
    exactly(number(sizes[1]))  # the shell form, for the run command: not ours
    for _ in range(number(line())):
        size, _, name = line().partition(b" ")
        left = number(size)
        if b"/" in name:
            os.makedirs(os.path.dirname(b"./" + name), exist_ok=True)
        with open(b"./" + name, "wb") as out:
            exactly(left, out)
    return job
if os.environ.get("HAZMAT_UNPACK") == "1":
    _hazmat_job = _hazmat_unpack()
else:
    _hazmat_job = None
del _hazmat_unpack
from .python_display import _hazmat_displays  # @DISPLAY@
def _hazmat_prepare(job):
    import builtins
    for name in [k for k in os.environ if k.startswith("HAZMAT_")]:
        del os.environ[name]
    path = os.path.abspath(sys.argv[1])
    sys.argv[:] = sys.argv[1:]
    if job is None and os.path.exists("/tmp/.hazmat-job.json"):
        with open("/tmp/.hazmat-job.json", "rb") as f:
            job = f.read()
        os.remove("/tmp/.hazmat-job.json")
    ask = None
    if job:
        import json
        job = json.loads(job)
        os.environ.update(job["env"])
        sys.argv.extend(job["args"])
        ask = job.get("displays")
    sys.path[0] = os.path.dirname(path)
    main = types.ModuleType("__main__")
    main.__file__ = path
    main.__cached__ = None
    main.__builtins__ = builtins
    main.__loader__ = importlib.machinery.SourceFileLoader("__main__", path)
    sys.modules["__main__"] = main
    with open(path, "rb") as f:
        source = f.read()
    try:
        if ask is None:
            return main.__dict__, compile(source, path, "exec", dont_inherit=True), None, None
        # with displays: a final expression is evaluated apart, for its rich representation
        tree = compile(source, path, "exec", 0x400, dont_inherit=True)  # ast.PyCF_ONLY_AST
        last = tree.body[-1] if tree.body else None
        tail = None
        if type(last).__name__ == "Expr" and type(last.value).__name__ != "Constant":
            tree.body.pop()
            tail = compile(_ast.Expression(last.value), path, "eval", dont_inherit=True)
        return main.__dict__, compile(tree, path, "exec", dont_inherit=True), tail, ask
    except (SyntaxError, ValueError) as exc:
        error = exc
    error.__traceback__ = None  # as python3 main.py shows it: no runner frame
    sys.excepthook(type(error), error, None)
    sys.exit(1)
def _hazmat_flush():
    # flush sys.stdout and sys.stderr as python3 does at its end (a closed one is left alone);
    # False when sys.stdout could not be: python3 then ends with status 120
    done = True
    for name in ("stdout", "stderr"):
        stream = getattr(sys, name, None)
        try:
            if stream is not None and not stream.closed:
                stream.flush()
        except Exception as exc:
            done = done and name != "stdout"
            try:
                sys.stderr.write(f"Exception ignored on flushing sys.{name}: {exc!r}\n")
            except Exception:
                pass
    return done
def _hazmat_status(exc):
    # the exit status of an uncaught SystemExit, and its message, as python3 gives them
    code = exc.code
    if code is None:
        return 0
    if isinstance(code, int):
        return code & 0xFF if -(2**63) <= code < 2**63 else 255
    try:
        stream = sys.stderr
        stream.write(str(code))
        stream.write("\n")
    except Exception:
        pass
    return 1
def _hazmat_clear(namespace):
    # as the interpreter clears a module at its end: names with one underscore first, then
    # the rest, each set to None (the objects' __del__ runs as their last reference goes)
    for first in (True, False):
        for key in list(namespace):
            if not isinstance(key, str) or key == "__builtins__":
                continue
            if not first or (key.startswith("_") and not key.startswith("__")):
                namespace[key] = None
def _hazmat_exit(status, interrupted=False):
    # What python3 does at a program's end, in its order, without tearing down the modules
    # of the runner and the image (numpy, pandas and matplotlib take 140 ms to): wait for the
    # program's threads, run its atexit functions, flush; free the program's own objects (its
    # modules in the working directory, then __main__, and what the collector finds), so
    # their __del__ runs and the files they hold are flushed and closed; then libc's exit(),
    # which flushes C's own buffers. The stdlib's cleanups are atexit functions, which ran.
    threading = sys.modules.get("threading")
    if threading is not None:
        try:
            threading._shutdown()
        except BaseException:
            pass
    import atexit
    atexit._run_exitfuncs()
    if not _hazmat_flush():
        status = 120  # as python3 does, whatever the status was
    try:
        gc.collect()
        here = os.path.dirname(_hazmat_globals.get("__file__") or "") + os.sep
        for module in reversed(list(sys.modules.values())):
            path = getattr(module, "__file__", None)
            if module is not _hazmat_module and isinstance(path, str) and path.startswith(here):
                _hazmat_clear(module.__dict__)
        _hazmat_clear(_hazmat_globals)
        gc.collect()
    except Exception:
        pass  # whatever the program left in sys.modules, it still ends
    _hazmat_flush()
    if interrupted:  # python3 ends by the signal itself (status 130 in a shell)
        signal.signal(signal.SIGINT, signal.SIG_DFL)
        os.kill(os.getpid(), signal.SIGINT)
        status = 130  # SIGINT blocked: python3's own fallback
    _hazmat_libc_exit(status)
_hazmat_globals, _hazmat_code, _hazmat_tail, _hazmat_ask = _hazmat_prepare(_hazmat_job)
_hazmat_module = sys.modules["__main__"]
del _hazmat_prepare, _hazmat_job
_hazmat_end = _hazmat_final = lambda *_: None
if _hazmat_ask is not None:
    _hazmat_begin, _hazmat_end, _hazmat_final = _hazmat_displays()
    _hazmat_begin(_hazmat_ask)
    del _hazmat_begin
del _hazmat_displays, _hazmat_ask
_hazmat_interrupted = False
try:
    exec(_hazmat_code, _hazmat_globals)
    if _hazmat_tail is not None:
        _hazmat_final(eval(_hazmat_tail, _hazmat_globals))
except SystemExit as _hazmat_exc:
    _hazmat_end()
    _hazmat_rc = _hazmat_status(_hazmat_exc)
except BaseException as _hazmat_exc:
    _hazmat_end()
    # the printed traceback starts in the program: drop the runner's own frame
    _hazmat_exc.__traceback__ = _hazmat_exc.__traceback__.tb_next
    sys.excepthook(type(_hazmat_exc), _hazmat_exc, _hazmat_exc.__traceback__)
    _hazmat_interrupted = isinstance(_hazmat_exc, KeyboardInterrupt)
    _hazmat_rc = 1
else:
    _hazmat_end()
    _hazmat_rc = 0
del _hazmat_code, _hazmat_tail
_hazmat_exit(_hazmat_rc, _hazmat_interrupted)
