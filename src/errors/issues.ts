import { ApiProblem, type FieldError } from './problem';
import type { ProblemCode } from './registry';

interface Issue {
  problem: ProblemCode;
  error: FieldError;
}

export interface IssuesOptions {
  /**
   * Problems that answer before any other, in this order (a reference that does not exist before
   * one that exists but accepts no postings). Without it, the first issue found answers.
   */
  precedence?: readonly ProblemCode[];
  /**
   * The answer's detail, per problem, from its issues' `field: message` list joined with '; '
   * (default: that list as it is).
   */
  detail?: Partial<Record<ProblemCode, (fieldMessages: string) => string>>;
}

/**
 * The one field-error collector: gathers what is wrong with a request so that one answer names
 * every culprit. The answer's code is the code of the first issue found (or the first of
 * `precedence` that has an issue; COLUMN_UNAVAILABLE only when nothing else is wrong); errors[]
 * lists every issue of that code. Reads (query, match, lists), writes (posting/input.ts
 * InputErrors, ledger/references.ts ReferenceCheck) and the catalog (pii, installed) use it.
 */
export class Issues {
  private readonly list: Issue[] = [];
  private detailOverride = new Map<ProblemCode, string>();
  private extensions = new Map<ProblemCode, Record<string, unknown[]>>();

  constructor(private readonly options: IssuesOptions = {}) {}

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
    const first = this.answering();
    if (!first) return;
    const same = this.list.filter((i) => i.problem === first.problem).map((i) => i.error);
    const fieldMessages = same.map((e) => `${e.field}: ${e.message}`).join('; ');
    const detail = this.detailOverride.get(first.problem) ?? this.options.detail?.[first.problem]?.(fieldMessages) ?? fieldMessages;
    const extensions = this.extensions.get(first.problem);
    throw new ApiProblem(first.problem, detail, { errors: same, ...(extensions ? { extensions } : {}) });
  }

  private answering(): Issue | undefined {
    for (const problem of this.options.precedence ?? []) {
      const found = this.list.find((i) => i.problem === problem);
      if (found) return found;
    }
    // What the installed build lacks is reported once the request is otherwise right.
    return this.list.find((i) => i.problem !== 'COLUMN_UNAVAILABLE') ?? this.list[0];
  }
}
