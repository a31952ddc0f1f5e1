import { ApiProblem } from '../../errors/problem';

/**
 * A document sent again under a number already entered: which fields of the request differ from
 * the stored document (read back through the catalog). Identical content replays the stored
 * document; any difference is a 409 naming these fields (`period`, `lines`, `lines[i]`).
 */

/**
 * The 409 of a document sent again with different content: `detail` (what was already entered
 * or posted, and as which record) and the differing fields; errors[] names the number's field
 * (`numberCode`) and each field that differs; `existingRecordNumber` points at the stored one.
 */
export function resendConflict(
  conflict: { code: 'DOCUMENT_NUMBER_CONFLICT' | 'TRANSACTION_NUMBER_CONFLICT'; numberField: string; numberCode: 'already_entered' | 'already_posted'; detail: string; existingRecordNumber: number },
  diff: readonly string[],
): ApiProblem {
  return new ApiProblem(conflict.code, `${conflict.detail} with different content: ${diff.join(', ')}.`, {
    errors: [{ field: conflict.numberField, code: conflict.numberCode }, ...diff.map((field) => ({ field, code: 'differs' }))],
    extensions: { existingRecordNumber: conflict.existingRecordNumber },
  });
}

/** An explicit period and year that differ from the stored ones (no explicit pair: nothing to compare). */
export function periodDiffers(stored: { period: number; year: number }, sent: { period?: number; year?: number }): boolean {
  return sent.period !== undefined && sent.year !== undefined && (stored.period !== sent.period || stored.year !== sent.year);
}

/**
 * `['lines']` when the line counts differ, else `lines[i]` (i = the index in the request) for each
 * sent line whose number the stored document lacks or whose content `differs`.
 */
export function lineDifferences<S extends { lineNumber: number }, I extends { lineNumber: number; index: number }>(
  stored: readonly S[],
  sent: readonly I[],
  differs: (stored: S, sent: I) => boolean,
): string[] {
  if (stored.length !== sent.length) return ['lines'];
  const byNumber = new Map(stored.map((l) => [l.lineNumber, l]));
  return sent
    .filter((line) => {
      const other = byNumber.get(line.lineNumber);
      return !other || differs(other, line);
    })
    .map((line) => `lines[${line.index}]`);
}
