import { ApiProblem } from '../../errors/problem';

/**
 * The form of an Idempotency-Key (spec, Limits: "up to 128 printable characters"): 1 to 128
 * printable ASCII characters, without leading or trailing space. The same rule as the
 * IdempotencyKey parameter of openapi.yaml (test/engines/idempotency/key-form.test.ts keeps the
 * two equal). Checked here, not by the contract validator, because a dry run ignores the key,
 * its form included (spec, Writes rule 7; docs/decisions/0407-a-dry-run-ignores-the-key-form.md):
 * the validator cannot tell a dry run from a write.
 */
export const IDEMPOTENCY_KEY_MAX_LENGTH = 128;
export const IDEMPOTENCY_KEY_PATTERN = /^[\x21-\x7E]([\x20-\x7E]*[\x21-\x7E])?$/;

/** 400 IDEMPOTENCY_KEY_INVALID naming the header when `key` is not a well-formed key, else undefined. */
export function keyFormProblem(key: string): ApiProblem | undefined {
  if (key.length <= IDEMPOTENCY_KEY_MAX_LENGTH && IDEMPOTENCY_KEY_PATTERN.test(key)) return undefined;
  return new ApiProblem('IDEMPOTENCY_KEY_INVALID', `Idempotency-Key must be 1 to ${IDEMPOTENCY_KEY_MAX_LENGTH} printable ASCII characters.`, {
    errors: [{ field: 'Idempotency-Key', code: 'invalid' }],
  });
}
