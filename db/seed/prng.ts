/**
 * Deterministic randomness for the demo company: a mulberry32 generator (32-bit state, fast,
 * good enough for test data) and the helpers the seed needs. Nothing in db/seed may call
 * Math.random: the same randomSeed must give the same rows, byte for byte.
 */
import { Dec } from '../../src/storage/decimal';

const HEX = Array.from({ length: 256 }, (_, i) => i.toString(16).padStart(2, '0'));

export class Prng {
  private state: number;
  private readonly seed: number;

  constructor(seed: number) {
    this.seed = seed >>> 0;
    this.state = this.seed;
  }

  /** Next 32-bit unsigned integer (mulberry32). */
  nextU32(): number {
    this.state = (this.state + 0x6d2b79f5) >>> 0;
    let t = this.state;
    t = Math.imul(t ^ (t >>> 15), t | 1);
    t ^= t + Math.imul(t ^ (t >>> 7), t | 61);
    return (t ^ (t >>> 14)) >>> 0;
  }

  /** Uniform in [0, 1). */
  next(): number {
    return this.nextU32() / 4294967296;
  }

  /** Integer in [min, max], both inclusive. */
  int(min: number, max: number): number {
    return min + Math.floor(this.next() * (max - min + 1));
  }

  chance(p: number): boolean {
    return this.next() < p;
  }

  pick<T>(items: readonly T[]): T {
    if (items.length === 0) throw new Error('pick from an empty list');
    return items[Math.floor(this.next() * items.length)] as T;
  }

  /** Picks by weight; weights need not sum to 1. */
  weighted<T>(items: ReadonlyArray<readonly [T, number]>): T {
    let total = 0;
    for (const [, w] of items) total += w;
    let r = this.next() * total;
    for (const [item, w] of items) {
      r -= w;
      if (r < 0) return item;
    }
    return items[items.length - 1]![0];
  }

  /** k distinct items (k clamped to the list length), in random order. */
  sample<T>(items: readonly T[], k: number): T[] {
    if (k * 4 < items.length) {
      // Few out of many: draw indices (no copy of a large list).
      const seen = new Set<number>();
      const out: T[] = [];
      while (out.length < k) {
        const i = Math.floor(this.next() * items.length);
        if (seen.has(i)) continue;
        seen.add(i);
        out.push(items[i] as T);
      }
      return out;
    }
    const copy = items.slice();
    const n = Math.min(k, copy.length);
    for (let i = 0; i < n; i++) {
      const j = i + Math.floor(this.next() * (copy.length - i));
      const tmp = copy[i]!;
      copy[i] = copy[j]!;
      copy[j] = tmp;
    }
    return copy.slice(0, n);
  }

  /** Exact money amount between min and max (in whole cents), as a decimal. */
  money(min: number, max: number): Dec {
    const cents = this.int(Math.round(min * 100), Math.round(max * 100));
    return new Dec(cents).div(100);
  }

  /** Exact decimal with `places` decimals between min and max. */
  decimal(min: number, max: number, places: number): Dec {
    const f = 10 ** places;
    return new Dec(this.int(Math.round(min * f), Math.round(max * f))).div(f);
  }

  /** RFC 4122 version-4 shaped uuid made from the generator. */
  uuid(): string {
    const a = this.nextU32();
    const b = this.nextU32();
    const c = this.nextU32();
    const d = this.nextU32();
    return (
      HEX[a >>> 24]! + HEX[(a >>> 16) & 255]! + HEX[(a >>> 8) & 255]! + HEX[a & 255]! + '-' +
      HEX[b >>> 24]! + HEX[(b >>> 16) & 255]! + '-' +
      HEX[((b >>> 8) & 0x0f) | 0x40]! + HEX[b & 255]! + '-' +
      HEX[((c >>> 24) & 0x3f) | 0x80]! + HEX[(c >>> 16) & 255]! + '-' +
      HEX[(c >>> 8) & 255]! + HEX[c & 255]! + HEX[d >>> 24]! + HEX[(d >>> 16) & 255]! + HEX[(d >>> 8) & 255]! + HEX[d & 255]!
    );
  }

  private ms = 0;

  /**
   * RFC 9562 version-7 shaped uuid: a 48-bit millisecond timestamp (a clock that starts at
   * `start` and advances one millisecond per id, so ids are unique, increasing and
   * deterministic) followed by random bits from the generator. Increasing keys keep the
   * primary-key indexes append-only, which matters for bulk loads of millions of rows.
   */
  uuid7(start: number): string {
    const t = start + this.ms++;
    const hi = Math.floor(t / 0x10000); // top 32 bits of the 48-bit timestamp
    const lo = t % 0x10000; // low 16 bits
    const b = this.nextU32();
    const c = this.nextU32();
    const d = this.nextU32();
    return (
      HEX[hi >>> 24]! + HEX[(hi >>> 16) & 255]! + HEX[(hi >>> 8) & 255]! + HEX[hi & 255]! + '-' +
      HEX[lo >>> 8]! + HEX[lo & 255]! + '-' +
      HEX[((b >>> 8) & 0x0f) | 0x70]! + HEX[b & 255]! + '-' +
      HEX[((c >>> 24) & 0x3f) | 0x80]! + HEX[(c >>> 16) & 255]! + '-' +
      HEX[(c >>> 8) & 255]! + HEX[c & 255]! + HEX[d >>> 24]! + HEX[(d >>> 16) & 255]! + HEX[(d >>> 8) & 255]! + HEX[d & 255]!
    );
  }

  /**
   * An independent generator for one area of the seed, derived from the original seed and a
   * label (not from the current state), so adding rows in one area does not shift another.
   */
  fork(label: string): Prng {
    let h = (this.seed ^ 0x9e3779b9) >>> 0;
    for (let i = 0; i < label.length; i++) h = Math.imul(h ^ label.charCodeAt(i), 0x01000193) >>> 0;
    return new Prng(h);
  }
}
