/**
 * The keys of a match index's rows, in key order. Most entities are keyed by a uuid (`_idnum`):
 * 100,000 of them as strings are ~6.4 MB of live heap in every worker (36-character strings plus
 * the array), as 16 bytes each ~1.6 MB. Keys are packed only when every one is a canonical
 * lower-case uuid, so that unpacking gives back the very text the database holds (SQLite compares
 * uuids as text); otherwise they stay as read.
 */
export interface RowKeys {
  readonly length: number;
  at(row: number): unknown;
}

const UUID = /^[0-9a-f]{8}-[0-9a-f]{4}-[0-9a-f]{4}-[0-9a-f]{4}-[0-9a-f]{12}$/;
const HEX = Array.from({ length: 256 }, (_, b) => b.toString(16).padStart(2, '0'));
/** Where the dashes go: after bytes 4, 6, 8 and 10. */
const DASH_AFTER = new Set([3, 5, 7, 9]);

class PackedUuids implements RowKeys {
  constructor(
    private readonly bytes: Uint8Array,
    readonly length: number,
  ) {}

  at(row: number): string {
    let out = '';
    const base = row * 16;
    for (let i = 0; i < 16; i++) {
      out += HEX[this.bytes[base + i]!];
      if (DASH_AFTER.has(i)) out += '-';
    }
    return out;
  }
}

class PlainKeys implements RowKeys {
  constructor(private readonly keys: readonly unknown[]) {}
  get length(): number {
    return this.keys.length;
  }
  at(row: number): unknown {
    return this.keys[row];
  }
}

export function rowKeys(keys: readonly unknown[]): RowKeys {
  if (!keys.every((k) => typeof k === 'string' && UUID.test(k))) return new PlainKeys(keys);
  const bytes = new Uint8Array(keys.length * 16);
  keys.forEach((k, row) => {
    const hex = (k as string).replace(/-/g, '');
    for (let i = 0; i < 16; i++) bytes[row * 16 + i] = parseInt(hex.slice(i * 2, i * 2 + 2), 16);
  });
  return new PackedUuids(bytes, keys.length);
}
