
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
