// One build at a time across processes, for the services' build (build.mjs) and the dashboard's
// (src/dashboard-build.ts): plain JavaScript, so build.mjs can use it before anything is compiled.
import { existsSync, mkdirSync, readFileSync, rmSync, statSync, writeFileSync } from 'node:fs';
import { join } from 'node:path';

function alive(pid) {
  try {
    process.kill(pid, 0);
    return true;
  } catch (error) {
    return error.code === 'EPERM';
  }
}

/**
 * Takes the lock folder `lock`, which holds the builder's pid: waits while another live process
 * holds it, takes it over when that process is gone or the folder is older than `waitMs`, and fails
 * after `waitMs` of waiting. Returns the release, which also runs if this process exits first.
 */
export async function acquireBuildLock(lock, { waitMs, pollMs, what }) {
  const deadline = Date.now() + waitMs;
  for (;;) {
    try {
      mkdirSync(lock);
      break;
    } catch (error) {
      if (error.code !== 'EEXIST') throw error;
    }
    let holder = 0;
    try {
      holder = Number(readFileSync(join(lock, 'pid'), 'utf8'));
    } catch {
      // The holder has not written its pid yet, or just released the lock.
    }
    const age = existsSync(lock) ? Date.now() - statSync(lock).mtimeMs : 0;
    if ((holder > 0 && !alive(holder)) || age > waitMs) rmSync(lock, { recursive: true, force: true });
    else if (Date.now() > deadline) throw new Error(`another process has been building ${what} for too long`);
    else await new Promise((resolve) => setTimeout(resolve, pollMs));
  }
  const release = () => {
    process.off('exit', release);
    rmSync(lock, { recursive: true, force: true });
  };
  process.once('exit', release);
  writeFileSync(join(lock, 'pid'), String(process.pid));
  return release;
}
