// The client against a live `hazmat serve` (tests/server/test_typescript_client.py starts one
// and runs `npm test` with HAZMAT_URL and HAZMAT_API_KEY set).

import assert from 'node:assert/strict';
import { describe, it } from 'node:test';

import { Hazmat, HazmatError } from '../src/index.js';

const url = process.env.HAZMAT_URL;
const apiKey = process.env.HAZMAT_API_KEY;
const live = url !== undefined && apiKey !== undefined;
const client = new Hazmat({ baseUrl: url ?? 'http://127.0.0.1:9', apiKey: apiKey ?? '' });

describe('a live hazmat serve', { skip: live ? false : 'HAZMAT_URL and HAZMAT_API_KEY are not set' }, () => {
  it('runs a program and says how it ended', async () => {
    const ran = await client.run({ code: 'print(6 * 7)' });
    assert.equal(ran.outcome, 'ok');
    assert.equal(ran.stdout, '42\n');
    const failed = await client.run({ code: 'ratio = 1 / 0', language: 'python' });
    assert.equal(failed.outcome, 'error');
    assert.equal(failed.exception?.name, 'ZeroDivisionError');
    assert.equal(failed.exception?.value, 'division by zero');
  });

  it('streams the output while the program runs, then the result', async () => {
    const chunks: string[] = [];
    const code = 'for i in range(3):\n    print(i, flush=True)';
    const result = await client.stream({ code }, { onStdout: (text) => chunks.push(text) });
    assert.equal(chunks.join(''), result.stdout);
    assert.equal(result.stdout, '0\n1\n2\n');
  });

  it('turns a refused request into a HazmatError with the type and status', async () => {
    await assert.rejects(client.run({ code: '1', language: 'cobol' }), (error: unknown) => {
      assert.ok(error instanceof HazmatError);
      assert.equal(error.status, 400);
      assert.equal(error.type, 'UnknownLanguage');
      return true;
    });
    const stranger = new Hazmat({ baseUrl: url ?? '', apiKey: 'hzm_000000000000_' + 'A'.repeat(43) });
    await assert.rejects(stranger.run({ code: '1' }), { status: 401, type: 'AccessDenied' });
  });

  it('keeps a session between calls, with its files, past a call that runs out of time, and forks it', async () => {
    const session = await client.openSession({ language: 'python' });
    try {
      await session.run({ code: 'x = 41' });
      assert.equal((await session.run({ code: 'x + 1' })).stdout, '42\n');
      const bytes = new Uint8Array([0, 255, 1, 254]);
      assert.deepEqual(await session.upload({ 'data.bin': bytes, 'note.txt': 'hi' }), [
        'data.bin',
        'note.txt',
      ]);
      await session.run({ code: "open('back.bin', 'wb').write(open('data.bin', 'rb').read()[::-1])" });
      const files = await session.download(['back.bin']);
      assert.deepEqual(Array.from(files['back.bin']), [254, 1, 255, 0]);
      const slow = await session.run({ code: 'while True:\n    pass', timeout: 1 });
      assert.equal(slow.outcome, 'timeout');
      assert.equal((await session.run({ code: 'print(x)' })).stdout, '41\n');
      // a fork: a new session from this one's state, which goes on apart
      const [fork] = await session.fork(1);
      assert.equal(fork.info.forked?.from, session.id);
      await fork.run({ code: 'x = 0' });
      assert.equal((await fork.run({ code: "print(x, open('note.txt').read())" })).stdout, '0 hi\n');
      assert.equal((await session.run({ code: 'print(x)' })).stdout, '41\n');
      await fork.close();
      // the service's built-in policy installs nothing: refused, saying what to use instead
      await assert.rejects(session.install(['seaborn==0.13.2']), (error: unknown) => {
        assert.ok(error instanceof HazmatError);
        assert.equal(error.status, 403);
        assert.equal(error.type, 'InstallRefused');
        assert.match(error.message, /use the standard library/);
        return true;
      });
    } finally {
      await session.close();
    }
    await assert.rejects(session.run({ code: '1' }), { status: 410, type: 'SessionClosed' });
  });
});
