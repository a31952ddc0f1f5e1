/**
 * Preload for cluster start tests (NODE_OPTIONS="--require <this file>"; the primary and every
 * worker load it, it acts in one worker only): in the cluster worker whose WORKER_INDEX is
 * HOLD_WORKER_INDEX, the primary's `prepared` message (src/cluster.ts: the database is migrated,
 * the worker may read it) is held back until the file HOLD_WORKER_RELEASE exists. That worker
 * loads its modules and then waits, short of reading the database and so short of listening,
 * for as long as the test wants: a sibling that is slow to start, made deterministic.
 * Plain CommonJS: it runs before tsx is registered.
 */
'use strict';
const fs = require('node:fs');

const index = process.env.HOLD_WORKER_INDEX;
const release = process.env.HOLD_WORKER_RELEASE;
if (index && release && process.env.WORKER_INDEX === index) {
  const emit = process.emit;
  const held = [];
  let released = false;
  process.emit = function (event, message, ...rest) {
    if (!released && event === 'message' && message && message.type === 'prepared') {
      held.push([message, ...rest]);
      return true;
    }
    return emit.call(this, event, message, ...rest);
  };
  const poll = setInterval(() => {
    if (!fs.existsSync(release)) return;
    released = true;
    clearInterval(poll);
    for (const args of held.splice(0)) emit.call(process, 'message', ...args);
  }, 10);
  // The IPC channel keeps the worker alive; this poll alone must not.
  poll.unref();
}
