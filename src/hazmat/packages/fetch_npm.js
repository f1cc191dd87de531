// Runs in the download sandbox as its program (hazmat/packages/fetch.py sends it; it is never
// required), twice an install at most, each in a sandbox of its own. First npm works out what
// the asked packages need (`npm install --package-lock-only --ignore-scripts`: the registry's
// metadata only, and no package's script runs here) and sends back `plan.json` (each
// package's name, version, place in node_modules, file name and the SHA-512 the registry
// lists); this sandbox is told nothing of the host's cache. Then, for the tarballs of that
// plan the host's cache lacks (`want.pack`, `<name>@<version>` each), `npm pack` fetches them,
// checked by npm against the integrity the registry lists, and sends them back each named by
// its own SHA-512. npm reaches the registry through the allowlist proxy
// (npm_config_https_proxy) and nothing else.
'use strict';
const { execFileSync } = require('child_process');
const crypto = require('crypto');
const fs = require('fs');
const path = require('path');

const want = JSON.parse(fs.readFileSync('want.json', 'utf8'));
const env = {
  ...process.env,
  HOME: '/tmp',
  npm_config_cache: '/tmp/npm-cache',
  npm_config_update_notifier: 'false',
  npm_config_fund: 'false',
  npm_config_audit: 'false',
  npm_config_ignore_scripts: 'true',
  // no git: a git dependency is neither cloned nor prepared (pacote runs `npm install` in it)
  npm_config_git: '/nonexistent/hazmat-no-git',
};

function npm(args, cwd, status) {
  try {
    return execFileSync('npm', args, { cwd, env, stdio: ['ignore', 'pipe', 'inherit'] });
  } catch (error) {
    process.exit(status);
  }
}

function say(text, status) {
  process.stderr.write(`hazmat: ${text}\n`);
  process.exit(status);
}

function resolve() {
  fs.mkdirSync('/tmp/plan');
  fs.writeFileSync('/tmp/plan/package.json', '{"name": "hazmat-install", "private": true}');
  npm(['install', '--package-lock-only', '--save', ...want.requirements], '/tmp/plan', 3);
  const lock = JSON.parse(fs.readFileSync('/tmp/plan/package-lock.json', 'utf8'));
  const asked = new Set(Object.keys(lock.packages[''].dependencies || {}));
  const plan = [];
  for (const [where, entry] of Object.entries(lock.packages)) {
    if (where === '') continue; // the install itself
    if (entry.link || !entry.resolved || !entry.integrity) {
      say(`${where} comes from no registry tarball (a link, a bundled or a git package)`, 4);
    }
    const sri = entry.integrity.split(' ').find((one) => one.startsWith('sha512-'));
    if (!sri) say(`${where} has no SHA-512 integrity in the registry's metadata`, 4);
    const digest = Buffer.from(sri.slice('sha512-'.length), 'base64').toString('hex');
    const name = where.slice(where.lastIndexOf('node_modules/') + 'node_modules/'.length);
    const file = path.basename(new URL(entry.resolved).pathname);
    const requested = asked.has(name) && where === `node_modules/${name}`;
    plan.push({ name, version: entry.version, file, path: where, digest, member: '', requested });
  }
  if (plan.length > want.most_files) {
    const names = plan.map((entry) => entry.name).join(', ');
    say(`these need ${plan.length} packages (${names}); at most ${want.most_files} may be ` +
        'installed at once (policy packages.max_packages)', 4);
  }
  return plan;
}

// the tarballs the host asked for, by name and version from the registry (npm knows their
// integrity then, and checks it), each named by its own SHA-512 in /tmp/out
function pack(specs) {
  fs.mkdirSync('/tmp/files');
  if (specs.length) npm(['pack', '--pack-destination', '/tmp/files', ...specs], '/tmp', 5);
  let size = 0;
  for (const name of fs.readdirSync('/tmp/files')) {
    const data = fs.readFileSync(path.join('/tmp/files', name));
    size += data.length;
    const digest = crypto.createHash('sha512').update(data).digest('hex');
    fs.renameSync(path.join('/tmp/files', name), path.join('/tmp/out', digest));
  }
  if (size > want.most_bytes) {
    say(`the files to download take ${(size / 2 ** 20).toFixed(1)} MB; at most ` +
        `${want.most_bytes / 2 ** 20} MB may be installed at once (policy packages.max_mb)`, 4);
  }
}

fs.mkdirSync('/tmp/out');
// first the plan alone; then, in a sandbox of its own, the tarballs of it the host lacks
const plan = want.pack ? [] : resolve();
if (want.pack) pack(want.pack);
fs.writeFileSync('/tmp/out/plan.json', JSON.stringify(plan));
execFileSync('tar', ['-cf', 'files.tar', '-C', '/tmp/out', '.']);
