// Worker thread: checkpoints the WAL of every SQLite database the process has open, each from its
// own connection, so the thread that serves requests never stalls copying pages back into a
// database file (or syncing it). One worker serves them all, started once a WAL has grown (db.ts):
// a thread costs ~12 MB. Plain JS:
// workers do not inherit the TypeScript loader.
import { parentPort, workerData } from 'node:worker_threads';
import Database from 'better-sqlite3';

/** @type {Map<number, import('better-sqlite3').Database>} */
const databases = new Map();

setInterval(() => {
  for (const db of databases.values()) {
    try {
      db.pragma('wal_checkpoint(PASSIVE)');
    } catch {
      // A busy database is checkpointed on the next tick.
    }
  }
}, workerData.intervalMs);

parentPort.on('message', (message) => {
  if (message.type === 'add') {
    try {
      const db = new Database(message.file);
      db.pragma('busy_timeout = 0');
      databases.set(message.id, db);
    } catch {
      // The service's own connection opened the file first; if this one cannot, the request
      // thread's backstop checkpoint (wal_autocheckpoint) still bounds the WAL.
    }
  } else {
    databases.get(message.id)?.close();
    databases.delete(message.id);
    parentPort.postMessage({ type: 'removed', id: message.id });
  }
});
