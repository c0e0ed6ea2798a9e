// Preloaded into a bench server by BENCH_SERVER_HEAP_PROFILE=<dir> (server.ts serverProfiling): samples every
// allocation of the process's life, including objects the young and old generation collections
// freed (node --heap-prof keeps only the objects still alive at exit, which says nothing about
// allocation rate), and writes <dir>/heap-<pid>.heapprofile at exit (DevTools' Memory tab or
// bench/heap-top.mjs read it). Plain JavaScript: it runs inside the compiled server.
import { Session } from 'node:inspector';
import { mkdirSync, writeFileSync } from 'node:fs';
import { join } from 'node:path';

const dir = process.env.BENCH_SERVER_HEAP_PROFILE;
if (dir) {
  const session = new Session();
  session.connect();
  session.post('HeapProfiler.enable');
  session.post('HeapProfiler.startSampling', {
    samplingInterval: 32 * 1024,
    includeObjectsCollectedByMajorGC: true,
    includeObjectsCollectedByMinorGC: true,
  });
  // A same-thread inspector session answers synchronously, so this runs to the end inside 'exit'.
  process.on('exit', () => {
    session.post('HeapProfiler.stopSampling', (error, result) => {
      if (error) return;
      mkdirSync(dir, { recursive: true });
      writeFileSync(join(dir, `heap-${process.pid}.heapprofile`), JSON.stringify(result.profile));
    });
  });
}
