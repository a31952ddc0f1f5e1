/**
 * Unknown fields in v2 write bodies. v2 ignored unknown request fields (spec, Versioning 3 lists
 * "unknown fields rejected" among what v3 changed), and /api/v2 is a frozen compatibility surface:
 * so a v2 write body's fields that its input document (openapi-v2.yaml) does not list are dropped,
 * at any depth, before the posting: nothing of them reaches the engines or is stored. An operator
 * may refuse them instead (V2_REJECT_UNKNOWN_FIELDS=true): the validator then gets the write
 * inputs closed (`additionalProperties: false`) and answers 400 VALIDATION_FAILED naming each one.
 * docs/decisions/0405-v2-writes-ignore-unknown-fields.md.
 */

type Schema = Record<string, any>;

/** A local `$ref` (`#/components/schemas/X`) followed to its schema. */
function resolve(doc: Schema, schema: Schema | undefined): Schema | undefined {
  let s = schema;
  for (let hops = 0; s && typeof s.$ref === 'string' && hops < 32; hops++) {
    s = (s.$ref as string)
      .replace(/^#\//, '')
      .split('/')
      .reduce<any>((at, part) => at?.[part.replace(/~1/g, '/').replace(/~0/g, '~')], doc);
  }
  return s;
}

/** The JSON request body schema of the POST at `path` in the document. */
export function writeBodySchema(doc: Schema, path: string): Schema | undefined {
  return resolve(doc, doc.paths?.[path]?.post?.requestBody?.content?.['application/json']?.schema);
}

const isPlainObject = (v: unknown): v is Record<string, unknown> => typeof v === 'object' && v !== null && !Array.isArray(v);

/**
 * `value` without the properties its schema does not list, at any depth (objects with
 * `properties`, arrays with `items`); the input is not changed. `dropped` receives the JSON path of
 * each field dropped (`memo`, `lines[0].memo`), for the request log. Anything the walk cannot
 * follow (no schema, a value of another type) is left as it is for the validator and the engine.
 */
export function dropUnknownFields(doc: Schema, schema: Schema | undefined, value: unknown, dropped: string[], at = ''): unknown {
  const s = resolve(doc, schema);
  if (!s) return value;
  if (Array.isArray(value) && s.items) return value.map((item, i) => dropUnknownFields(doc, s.items, item, dropped, `${at}[${i}]`));
  if (!isPlainObject(value) || !isPlainObject(s.properties)) return value;
  const out: Record<string, unknown> = {};
  for (const [key, v] of Object.entries(value)) {
    const path = at === '' ? key : `${at}.${key}`;
    if (Object.prototype.hasOwnProperty.call(s.properties, key)) out[key] = dropUnknownFields(doc, s.properties[key] as Schema, v, dropped, path);
    else dropped.push(path);
  }
  return out;
}

/**
 * The document with every object schema a write body of `paths` reaches closed
 * (`additionalProperties: false`): the validator's copy under V2_REJECT_UNKNOWN_FIELDS.
 */
export function closeWriteBodies(doc: Schema, paths: readonly string[]): Schema {
  const seen = new Set<Schema>();
  const close = (schema: Schema | undefined): void => {
    const s = resolve(doc, schema);
    if (!s || typeof s !== 'object' || seen.has(s)) return;
    seen.add(s);
    if (isPlainObject(s.properties)) {
      s.additionalProperties = false;
      for (const p of Object.values(s.properties)) close(p as Schema);
    }
    if (s.items) close(s.items);
  };
  for (const p of paths) close(writeBodySchema(doc, p));
  return doc;
}
