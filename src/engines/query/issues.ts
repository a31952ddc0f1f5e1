import { ApiProblem, type FieldError } from '../../errors/problem';
import type { ProblemCode } from '../../errors/registry';

interface Issue {
  problem: ProblemCode;
  error: FieldError;
}

/**
 * Collects what is wrong with a request so that one answer names every culprit. The answer's
 * code is the code of the first issue found; errors[] lists every issue of that code.
 */
export class Issues {
  private readonly list: Issue[] = [];
  private detailOverride = new Map<ProblemCode, string>();

  add(problem: ProblemCode, field: string, code: string, message: string): void {
    this.list.push({ problem, error: { field, code, message } });
  }

  /** A detail to use instead of the joined messages when `problem` is the answer. */
  setDetail(problem: ProblemCode, detail: string): void {
    this.detailOverride.set(problem, detail);
  }

  get empty(): boolean {
    return this.list.length === 0;
  }

  throwIfAny(): void {
    const first = this.list[0];
    if (!first) return;
    const same = this.list.filter((i) => i.problem === first.problem).map((i) => i.error);
    const detail = this.detailOverride.get(first.problem) ?? same.map((e) => `${e.field}: ${e.message}`).join('; ');
    throw new ApiProblem(first.problem, detail, { errors: same });
  }
}
