"""Runners: an interpreter started with the container, idle until the agent says "go".

A runner is what makes a pre-started container fast: the interpreter has already paid for its
own start when the job arrives. The agent starts it in the background at container start; it
prints `hazmat-ready` on stdout (the host takes nothing from a container before that line),
then waits for SIGUSR2. The agent sends the signal once it has read the job's first lines;
without a build step the runner then reads the rest of the job from stdin (the env and args
as JSON, the input files), with one the stage script has done so and left the env and args in
/tmp/.hazmat-job.json. The runner removes hazmat's variables from its environment and runs
the program in itself, as `python3 main.py` or `node main.js` would: same argv, `__main__` /
`require.main`, exit status, and tracebacks without any frame of the runner. The program's
own environment and arguments are applied just before it starts.
Everything after that is the agent's: it waits for the runner, kills what the program left
behind, collects the output files and prints the end marker.

The runner shares the program's process and uid (never the agent's), so nothing it could say
is trusted; it says nothing after "ready" anyway.
"""

from __future__ import annotations

from collections.abc import Mapping
from types import MappingProxyType

from hazmat.backends.display_runner import DISPLAY

__all__ = ["READY_LINE", "RUNNERS"]

READY_LINE = b"hazmat-ready\n"

PYTHON = r"""
import os, signal, sys
signal.pthread_sigmask(signal.SIG_BLOCK, {signal.SIGUSR2})
def _hazmat_preload(path="/etc/hazmat/preload.py"):
    # an image's own warm-up (python-data imports numpy, pandas and matplotlib), paid for
    # before the job exists; a failure here is the program's to meet when it imports
    try:
        with open(path, "rb") as f:
            code = compile(f.read(), path, "exec")
        exec(code, {"__name__": "__hazmat_preload__"})
    except FileNotFoundError:
        pass
    except Exception:
        pass
_hazmat_preload()
del _hazmat_preload
import json  # the job's env, args and displays come as JSON: its import (10 ms) paid now
os.write(1, b"hazmat-ready\n")
signal.sigwait({signal.SIGUSR2})
signal.pthread_sigmask(signal.SIG_UNBLOCK, {signal.SIGUSR2})
def _hazmat_unpack():
    # the rest of the job, as the agent's stage script would read it (backends/agent.py)
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
@DISPLAY@
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
"""

PYTHON = PYTHON.replace("@DISPLAY@", DISPLAY.strip("\n"))

NODE = r"""
(() => {
  const fs = require('fs');
  const path = require('path');
  const { runMain } = require('module');
  // this runner is a file (not `node -e`, which puts every built-in module on the global
  // object): the program sees the globals `node main.js` gives; the file goes at once
  fs.unlinkSync(__filename);
  // a signal listener alone does not keep node running
  const idle = setInterval(() => {}, 2147483647);
  const die = (why) => {
    fs.writeSync(2, 'hazmat-agent: ' + why + '\n');
    process.reallyExit(125);
  };
  const pause = new Int32Array(new SharedArrayBuffer(4));
  const readSome = (buf, off, len) => {
    for (;;) {
      try {
        return fs.readSync(0, buf, off, len, null);
      } catch (e) {
        if (e.code !== 'EAGAIN') throw e;
        Atomics.wait(pause, 0, 0, 1);
      }
    }
  };
  const line = () => {
    const got = [];
    const one = Buffer.alloc(1);
    for (;;) {
      if (readSome(one, 0, 1) === 0) die('truncated job');
      if (one[0] === 10) return Buffer.from(got);
      got.push(one[0]);
    }
  };
  const exactly = (size) => {
    const data = Buffer.alloc(size);
    for (let off = 0; off < data.length; ) {
      const n = readSome(data, off, Math.min(data.length - off, 65536));
      if (n === 0) die('truncated job');
      off += n;
    }
    return data;
  };
  const number = (field) => {
    const text = field.toString('latin1');
    if (!/^[0-9]+$/.test(text)) die('unknown job format');
    return Number(text);
  };
  // the rest of the job, as the agent's stage script would read it (backends/agent.py)
  const unpack = () => {
    const sizes = line();
    const space = sizes.indexOf(32);
    if (space < 0) die('unknown job format');
    const job = exactly(number(sizes.subarray(0, space)));
    exactly(number(sizes.subarray(space + 1)));  // the shell form, for the run command
    const count = number(line());
    for (let i = 0; i < count; i++) {
      const head = line();
      const at = head.indexOf(32);
      if (at < 0) die('unknown job format');
      const data = exactly(number(head.subarray(0, at)));
      const name = Buffer.concat([Buffer.from('./'), head.subarray(at + 1)]);
      if (head.indexOf(47, at + 1) >= 0) {
        fs.mkdirSync(path.dirname(name.toString()), { recursive: true });
      }
      fs.writeFileSync(name, data);
    }
    return job;
  };
  process.on('SIGUSR2', function hazmatStart() {
    process.removeListener('SIGUSR2', hazmatStart);
    clearInterval(idle);
    // a session's warm runner (session_agent.py): the call's stdin is a file the unpack
    // script wrote once the call came, opened as fd 0 (node makes process.stdin on first use)
    const stdinFile = process.env.HAZMAT_STDIN_FILE;
    if (stdinFile) {
      fs.closeSync(0);
      if (fs.openSync(stdinFile, 'r') !== 0) die('cannot open the call\'s stdin');
    }
    let job = process.env.HAZMAT_UNPACK === '1' ? unpack() : null;
    for (const name of Object.keys(process.env)) {
      if (name.startsWith('HAZMAT_')) delete process.env[name];
    }
    // main.js, or main.mjs (an ES module) or main.cjs when the host named the source so
    let entry = path.resolve(process.argv[2]);
    for (const other of ['.mjs', '.cjs']) {
      const named = entry.replace(/\.js$/, other);
      if (!fs.existsSync(entry) && fs.existsSync(named)) entry = named;
    }
    process.argv.splice(1, 2, entry);
    process.execArgv.length = 0;
    const jobFile = '/tmp/.hazmat-job.json';
    if (job === null && fs.existsSync(jobFile)) {
      job = fs.readFileSync(jobFile);
      fs.unlinkSync(jobFile);
    }
    if (job !== null && job.length > 0) {
      const parsed = JSON.parse(job.toString('utf8'));
      Object.assign(process.env, parsed.env);
      process.argv.push(...parsed.args);
    }
    // runMain is called by the event loop itself, so no frame of this runner is on the
    // program's stack (its stack traces end in node's own frames, as with `node main.js`)
    setImmediate(runMain, entry);
  });
  // on stdout, or (a session's warm runner) on a channel of the agent's own
  const readyFd = Number(process.env.HAZMAT_READY_FD || 1);
  fs.writeSync(readyFd, 'hazmat-ready\n');
  if (readyFd !== 1) fs.closeSync(readyFd);
})();
"""

RUBY = r"""
->() {
  # everything of the runner's is local to this lambda: the program's top level (evaluated in
  # TOPLEVEL_BINDING) sees no variable, constant or method of it
  wake, waker = IO.pipe
  Signal.trap("USR2") { waker.syswrite("x") }
  STDOUT.syswrite("hazmat-ready\n")
  wake.read(1)
  Signal.trap("USR2", "DEFAULT")
  [wake, waker].each(&:close)
  die = ->(why) { STDERR.syswrite("hazmat-agent: #{why}\n"); exit!(125) }
  some = ->(size) do
    STDIN.sysread(size)
  rescue IO::WaitReadable
    IO.select([STDIN])
    retry
  rescue EOFError
    die.("truncated job")
  end
  exactly = ->(size) {
    got = "".b
    got << some.([size - got.bytesize, 65536].min) while got.bytesize < size
    got
  }
  line = -> {
    got = "".b
    while (byte = exactly.(1)) != "\n"
      got << byte
    end
    got
  }
  number = ->(field) { field.match?(/\A[0-9]+\z/) ? field.to_i : die.("unknown job format") }
  job = nil
  if ENV["HAZMAT_UNPACK"] == "1"
    sizes = line.().split(" ")
    die.("unknown job format") unless sizes.size == 2
    job = exactly.(number.(sizes[0]))
    exactly.(number.(sizes[1]))  # the shell form, for the run command: not ours
    number.(line.()).times do
      size, name = line.().split(" ", 2)
      die.("unknown job format") if name.nil?
      data = exactly.(number.(size))
      folders = File.dirname(name).split("/").reject { |part| part == "." }
      folders.each_index do |i|
        folder = folders[0..i].join("/")
        Dir.mkdir(folder) unless File.directory?(folder)
      end
      File.binwrite("./#{name}", data)
    end
  end
  ENV.keys.each { |name| ENV.delete(name) if name.start_with?("HAZMAT_") }
  # the env and args, as JSON of one shape ({"env": {...}, "args": [...]}, ASCII with \u
  # escapes): read here without the json library, which would change the program's world
  text = ->(quoted) {
    quoted.gsub(/(?:\\u[0-9a-fA-F]{4})+|\\(.)/) do |escape|
      if escape.start_with?("\\u")
        units = escape.scan(/[0-9a-fA-F]{4}/).map(&:hex)
        units.pack("n*").force_encoding("UTF-16BE").encode("UTF-8", invalid: :replace)
      else
        { "n" => "\n", "t" => "\t", "r" => "\r", "b" => "\b", "f" => "\f" }.fetch($1, $1)
      end
    end
  }
  strings = ->(part) { part.scan(/"((?:[^"\\]|\\.)*)"/).map { |(s)| text.(s) } }
  if job && !job.empty?
    shape = /\A\{"env": \{(.*)\}, "args": \[(.*)\]\}\z/m.match(job)
    die.("unknown job format") if shape.nil?
    strings.(shape[1]).each_slice(2) { |name, value| ENV[name] = value }
    ARGV.replace(strings.(shape[2]))
  else
    ARGV.clear
  end
  $0 = "main.rb"
  source = File.read("main.rb", mode: "rb")
  begin
    TOPLEVEL_BINDING.eval(source, "main.rb", 1)
  rescue SystemExit
    raise
  rescue Exception => error
    # as `ruby main.rb` reports it: no frame of this runner
    frames = (error.backtrace || []).reject { |frame| frame.start_with?("-e:") }
    STDOUT.flush rescue nil
    if frames.empty?  # a syntax error: the parser's message, its class on the error's line
      lines = error.message.lines
      at = lines.index { |text| text.include?("syntax error") } || 0
      lines[at] = "#{lines[at].chomp} (#{error.class})\n" unless lines.empty?
      STDERR.write("main.rb: #{lines.join}")
    else
      error.set_backtrace(frames)
      STDERR.write(error.full_message(highlight: false, order: :top))
    end
    exit 1
  end
}.call
"""

# name -> (shell command line the agent starts in the background, with the entry file appended
# by the language spec; the runner's code, passed in HAZMAT_RUNNER)
RUNNERS: Mapping[str, tuple[str, str]] = MappingProxyType(
    {
        "python": ('exec python3 -c "$HAZMAT_RUNNER"', PYTHON),
        # V8 sizes its heap from the host's memory, not the cgroup's: without a limit of its
        # own, a program at the memory limit thrashes in GC until the wall clock runs out
        "node": (
            "printf '%s' \"$HAZMAT_RUNNER\" > /tmp/.hazmat-runner.js &&"
            ' exec node --max-old-space-size="$HAZMAT_HEAP_MB" /tmp/.hazmat-runner.js',
            NODE,
        ),
        "ruby": ('exec ruby -e "$HAZMAT_RUNNER"', RUBY),
    }
)
