
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
  // the rest of the job, as the agent's stage script would read it (backends/agent/single.py)
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
  // display(value): what the program shows, as Python's display() (displays.py): each value
  // one JSON line of MIME type -> data (base64 for bytes) in a file the agent collects under
  // its own cap; the host checks every one again. A Buffer is an image by its first bytes
  // (PNG, JPEG, GIF); a string is text; anything else is JSON (with its text). Or by type:
  // display.html(s), .svg(s), .markdown(s), .png(buf), .json(v), or display(bundle, {raw: true})
  const displays = (ask) => {
    const file = '/tmp/.hazmat-displays';
    try { fs.unlinkSync(file); } catch (e) { /* none from an earlier call */ }
    let count = 0;
    let bytes = 0;
    const write = (entry) => {
      try {
        fs.appendFileSync(file, JSON.stringify(entry) + '\n');
      } catch (e) {
        fs.writeSync(2, 'hazmat: a display was lost: ' + e.message + '\n');
      }
    };
    const emit = (bundle) => {
      const entry = {};
      let size = 0;
      for (const [mime, data] of Object.entries(bundle)) {
        const binary = Buffer.isBuffer(data) || data instanceof Uint8Array;
        if (!binary && typeof data !== 'string') continue;
        size += binary ? data.length : Buffer.byteLength(data);
        entry[mime] = binary ? Buffer.from(data).toString('base64') : data;
      }
      if (Object.keys(entry).length === 0) return;
      if (count >= ask.max) return write({ 'hazmat/dropped': 'count' });
      if (bytes + size > ask.bytes) return write({ 'hazmat/dropped': 'bytes' });
      count += 1;
      bytes += size;
      write(entry);
    };
    const image = (data) => {
      const b = Buffer.from(data);
      if (b.subarray(0, 8).equals(Buffer.from('89504e470d0a1a0a', 'hex'))) return 'image/png';
      if (b[0] === 0xff && b[1] === 0xd8) return 'image/jpeg';
      if (b.subarray(0, 4).toString('latin1') === 'GIF8') return 'image/gif';
      return null;
    };
    const json = (value) => {
      const text = JSON.stringify(value, null, 2);
      return text === undefined ? { 'text/plain': String(value) }
        : { 'application/json': text, 'text/plain': text };
    };
    const display = (...values) => {
      const last = values[values.length - 1];
      const raw = values.length > 1 && last && typeof last === 'object' && last.raw === true;
      for (const value of raw ? values.slice(0, -1) : values) {
        if (raw && value && typeof value === 'object') emit(value);
        else if (Buffer.isBuffer(value) || value instanceof Uint8Array) {
          const mime = image(value);
          if (mime) emit({ [mime]: value });
          else fs.writeSync(2, 'hazmat: display() takes bytes of a PNG, JPEG or GIF image\n');
        } else if (typeof value === 'string') emit({ 'text/plain': value });
        else emit(json(value));
      }
    };
    display.html = (text) => emit({ 'text/html': String(text) });
    display.svg = (text) => emit({ 'image/svg+xml': String(text) });
    display.markdown = (text) => emit({ 'text/markdown': String(text) });
    display.png = (data) => emit({ 'image/png': data });
    display.json = (value) => emit(json(value));
    return display;
  };
  // a program that judges a submission (grade/harness.py): a crash node reports as fatal (an
  // uncaught error, an unhandled rejection, a syntax error) ends it with 70, which is no
  // testlib code, not 1; node prints it as ever. A program's own 'uncaughtException'
  // listener decides for itself, and process.exit(1) stays 1
  const crashes = () => {
    let crashed = false;
    process.on('uncaughtExceptionMonitor', () => { crashed = true; });
    process.on('exit', (code) => {
      const own = process.listenerCount('uncaughtException') > 0;
      if (crashed && code === 1 && !own) process.exitCode = 70;
    });
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
      const env = parsed.env || {};
      if (env.HAZMAT_HARNESS === '1') crashes();
      delete env.HAZMAT_HARNESS;
      Object.assign(process.env, env);
      process.argv.push(...(parsed.args || []));
      if (parsed.displays) globalThis.display = displays(parsed.displays);
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
