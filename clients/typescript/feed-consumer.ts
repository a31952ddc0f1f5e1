/** docs/receiving-changes.md: a consumer of the event feed (typechecked by `make typecheck`; run: KEY=... tsx clients/typescript/feed-consumer.ts). */
import fs from 'node:fs';
import { ApiError, createAccountingClient } from './client';

const api = createAccountingClient({ baseUrl: process.env.BASE_URL ?? 'http://localhost:8080/api/v3', apiKey: process.env.KEY! });
const CURSOR_FILE = 'feed.cursor';

async function handle(event: { id?: string; type?: string; data?: { record?: Record<string, unknown> } }): Promise<void> {
  console.log(event.id, event.type, event.data?.record?.id); // make this idempotent by event.id
}

async function main(): Promise<void> {
  let after = fs.existsSync(CURSOR_FILE) ? fs.readFileSync(CURSOR_FILE, 'utf8') : undefined;
  for (;;) {
    try {
      const { data } = await api.POST('/events/query', { body: { ...(after ? { after } : {}), page: { pageSize: 500 }, waitSeconds: 30 } });
      for (const event of data!.data) await handle(event);
      after = data!.page.nextCursor;
      fs.writeFileSync(CURSOR_FILE, after); // only once the page is processed
    } catch (err) {
      if (!(err instanceof ApiError) || err.code !== 'EVENT_CURSOR_EXPIRED') throw err;
      after = String(err.problem.oldestCursor); // down for more than 30 days: re-read the documents with /query
    }
  }
}

void main();
