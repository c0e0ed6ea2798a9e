// Worker thread: checkpoints the SQLite WAL from its own connection, so the thread that serves
// requests never stalls copying pages back into the database file. Plain JS: workers do not
// inherit the TypeScript loader.
import { parentPort, workerData } from 'node:worker_threads';
import Database from 'better-sqlite3';

const db = new Database(workerData.file);
db.pragma('busy_timeout = 0');
const timer = setInterval(() => {
  try {
    db.pragma('wal_checkpoint(PASSIVE)');
  } catch {
    // A busy database is checkpointed on the next tick.
  }
}, workerData.intervalMs);

parentPort.once('message', () => {
  clearInterval(timer);
  db.close();
  parentPort.postMessage('closed');
});
