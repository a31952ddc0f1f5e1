/** The README's first read and first posting (typechecked by `make test`; run: KEY=... tsx clients/typescript/example.ts). */
import { ApiError, createAccountingClient } from './client';

async function main(): Promise<void> {
  const api = createAccountingClient({ baseUrl: 'http://localhost:8080/api/v3', apiKey: process.env.KEY! });

  // A first read
  const { data: parts } = await api.POST('/parts/query', {
    body: { select: ['partCode', 'partName', 'partCost'], orderBy: ['partCode ASC'], page: { pageNumber: 1, pageSize: 5 } },
  });

  // A first posting: keep the Idempotency-Key with the document, so a retry after a crash reuses it
  try {
    const { data: posted, response } = await api.POST('/ledger-transactions', {
      params: { header: { 'Idempotency-Key': 'JE-2026-1101' } },
      body: {
        transactionNumber: 'JE-2026-1101',
        transactionDate: '2026-11-30',
        description: 'November share of prepaid liability insurance',
        sourceNumber: 102,
        lines: [
          { lineNumber: 1, ledgerAccount: 7050, description: 'GL insurance November', debitAmount: 1850.0 },
          { lineNumber: 2, ledgerAccount: 1310, description: 'Prepaid insurance', creditAmount: 1850.0 },
        ],
      },
    });
    console.log(response.headers.get('Idempotency-Status'), posted?.ledgerTransaction);
  } catch (err) {
    if (err instanceof ApiError) console.error(err.status, err.code, err.correlationId, err.errors);
    else throw err;
  }
  console.log(parts?.data.length);
}

void main();
