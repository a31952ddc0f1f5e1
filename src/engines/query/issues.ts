import { ApiProblem, type FieldError } from '../../errors/problem';
import type { ProblemCode } from '../../errors/registry';

interface Issue {
  problem: ProblemCode;
  error: FieldError;
}

/**
 * Collects what is wrong with a request so that one answer names every culprit. The answer's
 * code is the code of the first issue found (COLUMN_UNAVAILABLE only when nothing else is wrong);
 * errors[] lists every issue of that code.
 */
export class Issues {
  private readonly list: Issue[] = [];
  private detailOverride = new Map<ProblemCode, string>();
  private extensions = new Map<ProblemCode, Record<string, unknown[]>>();

  add(problem: ProblemCode, field: string, code: string, message: string): void {
    this.list.push({ problem, error: { field, code, message } });
  }

  /** A detail to use instead of the joined messages when `problem` is the answer. */
  setDetail(problem: ProblemCode, detail: string): void {
    this.detailOverride.set(problem, detail);
  }

  /** Appends `value` to the list extension member `key` of the answer when `problem` is the answer. */
  extend(problem: ProblemCode, key: string, value: unknown): void {
    let members = this.extensions.get(problem);
    if (!members) this.extensions.set(problem, (members = {}));
    (members[key] ??= []).push(value);
  }

  /** The list extension member `key` of `problem` so far. */
  extension(problem: ProblemCode, key: string): readonly unknown[] {
    return this.extensions.get(problem)?.[key] ?? [];
  }

  get empty(): boolean {
    return this.list.length === 0;
  }

  throwIfAny(): void {
    // What the installed build lacks is reported once the request is otherwise right.
    const first = this.list.find((i) => i.problem !== 'COLUMN_UNAVAILABLE') ?? this.list[0];
    if (!first) return;
    const same = this.list.filter((i) => i.problem === first.problem).map((i) => i.error);
    const detail = this.detailOverride.get(first.problem) ?? same.map((e) => `${e.field}: ${e.message}`).join('; ');
    const extensions = this.extensions.get(first.problem);
    throw new ApiProblem(first.problem, detail, { errors: same, ...(extensions ? { extensions } : {}) });
  }
}
