
import ast, builtins, importlib.machinery, io, json, os, signal, sys, types
from .preload import _hazmat_preload  # @PRELOAD@
_hazmat_preload()
del _hazmat_preload
from .python_display import _hazmat_displays  # @DISPLAY@
_begin, _end, _final = _hazmat_displays()
del _hazmat_displays
def _limit_memory(mb):
    # The session's memory limit as the interpreter's address space (backends/kept/
    # session.py): what it maps now, plus what is left of the limit beyond what it holds now,
    # less a margin for the kernel's own memory for it. An allocation past it is a MemoryError
    # in the call, which the session outlives with its variables, under runc and gVisor alike
    # (gVisor has no OOM killer of its own: the host's would end the whole sandbox). The soft
    # limit only: a program that needs more address space than memory (a JVM it starts) may
    # raise it. Two malloc arenas, so that threads do not each reserve one (64 MB apiece).
    import ctypes, resource
    try:
        ctypes.CDLL(None).mallopt(-8, 2)  # M_ARENA_MAX
    except (OSError, AttributeError):
        pass
    with open("/proc/self/status") as f:
        status = dict(line.split(":", 1) for line in f if ":" in line)
    size, held = (int(status[k].split()[0]) * 1024 for k in ("VmSize", "VmRSS"))
    budget = size + max(0, (mb - 16) * 2**20 - held)
    hard = resource.getrlimit(resource.RLIMIT_AS)[1]
    if hard != resource.RLIM_INFINITY:
        budget = min(budget, hard)
    resource.setrlimit(resource.RLIMIT_AS, (budget, hard))
if os.environ.get("HAZMAT_MEMORY_MB", "").isdigit():
    _limit_memory(int(os.environ["HAZMAT_MEMORY_MB"]))
del _limit_memory
_go = open("/tmp/.hazmat-session/go", "rb", buffering=0)
_done = os.open("/tmp/.hazmat-session/done", os.O_WRONLY)
for _name in [k for k in os.environ if k.startswith("HAZMAT_")]:
    del os.environ[_name]
_path = os.path.abspath("main.py")
sys.path[0] = os.path.dirname(_path)
_main = types.ModuleType("__main__")
_main.__file__ = _path
_main.__cached__ = None
_main.__builtins__ = builtins
_main.__loader__ = importlib.machinery.SourceFileLoader("__main__", _path)
sys.modules["__main__"] = _main
_namespace = _main.__dict__
# the packages an install put into the session (hazmat/packages/install_cell.py), ahead of the
# image's, for the interpreter and its subprocesses
sys.path.insert(1, "/tmp/.packages")
os.environ["PYTHONPATH"] = "/tmp/.packages"
_base_env = dict(os.environ)
def _flush():
    for name in ("stderr", "stdout"):
        try:
            getattr(sys, name).flush()
        except Exception:
            pass
def _unpack():
    # the job the agent kept (backends/agent/session_agent.py): env and args, files, then stdin
    with open("/tmp/.hazmat-session/job", "rb") as f:
        data = f.read()
    def line(pos):
        end = data.index(b"\n", pos)
        return data[pos:end], end + 1
    sizes, pos = line(0)
    json_size, sh_size = (int(x) for x in sizes.split(b" "))
    job = data[pos : pos + json_size]
    pos += json_size + sh_size
    count, pos = line(pos)
    for name in _sources:
        try:
            os.remove(name)
        except FileNotFoundError:
            pass
    for _ in range(int(count)):
        head, pos = line(pos)
        size, _, name = head.partition(b" ")
        size = int(size)
        if b"/" in name:
            os.makedirs(os.path.dirname(b"./" + name), exist_ok=True)
        try:
            os.remove(b"./" + name)
        except FileNotFoundError:
            pass
        with open(b"./" + name, "wb") as out:
            out.write(data[pos : pos + size])
        pos += size
    try:
        os.remove("/tmp/.hazmat-stdin")
    except FileNotFoundError:
        pass
    with open("/tmp/.hazmat-stdin", "wb") as out:
        out.write(data[pos:])
    return json.loads(job) if job else None
def _reap():
    # the processes the last call left were killed by the agent; those that were this
    # interpreter's children are reaped here, so that none is left even as a zombie
    while True:
        try:
            pid, _ = os.waitpid(-1, os.WNOHANG)
        except ChildProcessError:
            return
        if pid == 0:
            return
def _job(job):
    _reap()
    os.environ.clear()
    os.environ.update(_base_env)
    sys.argv[:] = [_path]
    if job:
        os.environ.update(job["env"])
        sys.argv.extend(job["args"])
    fd = os.open("/tmp/.hazmat-stdin", os.O_RDONLY)
    os.dup2(fd, 0)
    os.close(fd)
    sys.stdin = io.TextIOWrapper(
        io.BufferedReader(io.FileIO(0, "r", closefd=False)), encoding=sys.stdout.encoding
    )
_running = {"cell": False}
def _interrupted(signum, frame):
    # the host's interrupt (the agent's SIGINT: the call ran out of time, or was cancelled): a
    # KeyboardInterrupt in the cell, as Jupyter's; between cells it is ignored
    if _running["cell"]:
        raise KeyboardInterrupt
signal.signal(signal.SIGINT, _interrupted)
_ours = globals()
def _theirs(exc, seen):
    # the program's frames only: this interpreter's own (the cell's runner, the interrupt's
    # handler, the displays) are left out of the traceback, and of those it was raised from
    while exc is not None and id(exc) not in seen:
        seen.add(id(exc))
        kept = []
        tb = exc.__traceback__
        while tb is not None:
            if tb.tb_frame.f_globals is not _ours:
                kept.append(tb)
            tb = tb.tb_next
        for one, after in zip(kept, [*kept[1:], None], strict=True):
            one.tb_next = after
        exc.__traceback__ = kept[0] if kept else None
        _theirs(exc.__cause__, seen)
        exc = exc.__context__
def _show(exc):
    _theirs(exc, set())
    sys.excepthook(type(exc), exc, exc.__traceback__)
def _cell(job):
    _job(job)
    _begin((job or {}).get("displays"))
    with open(_path, "rb") as f:
        source = f.read()
    try:
        tree = ast.parse(source, _path)
        last = None
        if tree.body and isinstance(tree.body[-1], ast.Expr):
            last = ast.Expression(tree.body.pop().value)
        body = compile(tree, _path, "exec", dont_inherit=True)
        tail = compile(last, _path, "eval", dont_inherit=True) if last else None
    except (SyntaxError, ValueError) as exc:
        exc.__traceback__ = None
        _show(exc)
        return 1
    try:
        _running["cell"] = True
        exec(body, _namespace)
        if tail is not None:
            value = eval(tail, _namespace)
            # shown as a display, or else printed: once, not both (a model reads each)
            if value is not None and not _final(value):
                print(repr(value))
        _running["cell"] = False
    except SystemExit as exc:
        _running["cell"] = False
        code = exc.code
        if code is None:
            return 0
        if isinstance(code, int):
            return code & 255
        print(code, file=sys.stderr)
        return 1
    except BaseException as exc:
        _running["cell"] = False
        _flush()
        _show(exc)
        return 1
    return 0
def _report(data):
    # one JSON line for the host (a pause or a resume), whatever the program did to sys.stdout
    os.write(1, json.dumps(data).encode() + b"\n")
def _made_here(value):
    try:
        return getattr(value, "__module__", None) == "__main__" or (
            getattr(type(value), "__module__", None) == "__main__"
        )
    except Exception:
        return True
def _save():
    # a pause: what can be pickled of the variables, beside the files; the rest is named
    import pickle
    values, modules, lost = {}, {}, {}
    for name, value in list(_namespace.items()):
        if name.startswith("__") and name.endswith("__"):
            continue
        if isinstance(value, types.ModuleType):
            modules[name] = value.__name__
        elif _made_here(value):
            lost[name] = "defined in the session: its code is not kept"
        else:
            try:
                values[name] = pickle.dumps(value, protocol=pickle.HIGHEST_PROTOCOL)
            except Exception as exc:
                lost[name] = "cannot be pickled (%s)" % type(exc).__name__
    with open(_saved, "wb") as f:
        pickle.dump({"values": values, "modules": modules}, f, protocol=pickle.HIGHEST_PROTOCOL)
    _report({"saved": sorted([*values, *modules]), "lost": lost})
    return 0
def _load():
    # a resume: the variables a pause saved, each on its own
    import importlib, pickle
    try:
        with open(_saved, "rb") as f:
            saved = pickle.load(f)
    except FileNotFoundError:
        _report({"loaded": [], "lost": {}})
        return 0
    finally:
        try:
            os.remove(_saved)
        except OSError:
            pass
    loaded, lost = [], {}
    for name, module in saved["modules"].items():
        try:
            _namespace[name] = importlib.import_module(module)
            loaded.append(name)
        except Exception as exc:
            lost[name] = "its module %s cannot be imported (%s)" % (module, type(exc).__name__)
    for name, data in saved["values"].items():
        try:
            _namespace[name] = pickle.loads(data)
            loaded.append(name)
        except Exception as exc:
            lost[name] = "cannot be unpickled (%s)" % type(exc).__name__
    _report({"loaded": sorted(loaded), "lost": lost})
    return 0
_saved = os.path.join(os.path.dirname(_path), ".hazmat-variables")
_sources = ("main.py",)
while True:
    _mode = _go.readline()
    if not _mode:
        os._exit(0)
    if _mode in (b"save\n", b"load\n"):
        try:
            _status = _save() if _mode == b"save\n" else _load()
        except Exception as _exc:  # the files go on without the variables
            _report({"lost": {"*": "the variables could not be %s: %s" % (
                "saved" if _mode == b"save\n" else "loaded", type(_exc).__name__)}})
            _status = 0
        _flush()
        os.write(_done, b"%d\n" % _status)
        continue
    try:
        _unpacked = _unpack()
    except Exception as _exc:
        os.write(2, b"hazmat-agent: cannot unpack the job: " + repr(_exc).encode() + b"\n")
        os.write(_done, b"125\n")
        continue
    try:
        _status = _cell(_unpacked) if _mode == b"run\n" else 0
    except KeyboardInterrupt:  # it came as the cell ended
        _running["cell"] = False
        _status = 1
    if _mode == b"run\n":
        _end()
    _flush()
    os.write(_done, b"%d\n" % _status)
