import { unlinkSync } from 'fs';
import { homedir } from 'os';
import { join } from 'path';

for (const name of ['.bash_history', '.zsh_history', '.python_history']) {
  try {
    unlinkSync(join(homedir(), name));
  } catch (e) {
    // not there
  }
}
