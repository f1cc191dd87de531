// Runs as a call in a JavaScript or TypeScript session (hazmat/packages/install.py sends it;
// it is never required): each tarball the host sent into .hazmat-install/ (checked against its
// digest on the host, then made again there of regular files and folders at plain relative
// paths, its first part already removed: hazmat/packages/archives.py) is unpacked, as the
// session's program, into its place under the working directory's node_modules/ (the places
// npm worked out, parents first), replacing what was there. npm's scripts are not run. Node
// finds the packages from the working directory, and a TypeScript program's build (run from
// /tmp/.hazmat-build) through /tmp/node_modules, a link.
'use strict';
const { execFileSync } = require('child_process');
const fs = require('fs');
const path = require('path');

const here = path.resolve('.hazmat-install');
const plan = JSON.parse(fs.readFileSync(path.join(here, 'plan.json'), 'utf8'));
plan.sort((a, b) => a.path.length - b.path.length);
try {
  for (const entry of plan) {
    const target = path.resolve(entry.path);
    fs.rmSync(target, { recursive: true, force: true });
    fs.mkdirSync(target, { recursive: true });
    const archive = path.join(here, entry.archive);
    const options = ['--no-same-owner', '--no-same-permissions', '--no-overwrite-dir'];
    execFileSync('tar', ['-xzf', archive, '-C', target, ...options], { stdio: 'inherit' });
  }
} finally {
  fs.rmSync(here, { recursive: true, force: true });
}
const link = '/tmp/node_modules';
if (!fs.existsSync(link)) fs.symlinkSync(path.resolve('node_modules'), link);
