
import os, signal, sys
signal.pthread_sigmask(signal.SIG_BLOCK, {signal.SIGUSR2})
from .preload import _hazmat_preload  # @PRELOAD@
_hazmat_preload()
del _hazmat_preload
import json  # the job's env, args and displays come as JSON: its import (10 ms) paid now
os.write(1, b"hazmat-ready\n")
signal.sigwait({signal.SIGUSR2})
signal.pthread_sigmask(signal.SIG_UNBLOCK, {signal.SIGUSR2})
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
from .display import _hazmat_displays  # @DISPLAY@
def _hazmat_prepare(job):
    import builtins, importlib.machinery, types
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
            import _ast
            tree.body.pop()
            tail = compile(_ast.Expression(last.value), path, "eval", dont_inherit=True)
        return main.__dict__, compile(tree, path, "exec", dont_inherit=True), tail, ask
    except (SyntaxError, ValueError) as exc:
        error = exc
    error.__traceback__ = None  # as python3 main.py shows it: no runner frame
    sys.excepthook(type(error), error, None)
    sys.exit(1)
def _hazmat_flush():
    # what python3 does after running a file (and not after -c): flush, ignoring errors
    for name in ("stderr", "stdout"):
        try:
            getattr(sys, name).flush()
        except Exception:
            pass
_hazmat_globals, _hazmat_code, _hazmat_tail, _hazmat_ask = _hazmat_prepare(_hazmat_job)
del _hazmat_prepare, _hazmat_job
_hazmat_end = _hazmat_final = lambda *_: None
if _hazmat_ask is not None:
    _hazmat_begin, _hazmat_end, _hazmat_final = _hazmat_displays()
    _hazmat_begin(_hazmat_ask)
    del _hazmat_begin
del _hazmat_displays, _hazmat_ask
try:
    exec(_hazmat_code, _hazmat_globals)
    if _hazmat_tail is not None:
        _hazmat_final(eval(_hazmat_tail, _hazmat_globals))
except SystemExit:
    _hazmat_end()
    _hazmat_flush()
    raise
except BaseException as _hazmat_exc:
    _hazmat_end()
    _hazmat_flush()
    # the printed traceback starts in the program: drop the runner's own frame
    _hazmat_exc.__traceback__ = _hazmat_exc.__traceback__.tb_next
    sys.excepthook(type(_hazmat_exc), _hazmat_exc, _hazmat_exc.__traceback__)
    sys.exit(1)
else:
    _hazmat_end()
    _hazmat_flush()
