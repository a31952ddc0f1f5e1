import fs from 'node:fs';
import path from 'node:path';
import { PROJECT_ROOT } from '../http/openapi-document';

/**
 * The frozen v2 document (openapi-v2.yaml at the project root, served at /v2/openapi.yaml). It is
 * also the source of the v2 names: the singular entity names and their v3 segments
 * (V2EntityName x-v3-entities), so the adapter cannot drift from what v2 publishes.
 */
let yamlText: string | undefined;
let parsed: Record<string, any> | undefined;

export function v2DocumentYaml(): string {
  yamlText ??= fs.readFileSync(path.join(PROJECT_ROOT, 'openapi-v2.yaml'), 'utf8');
  return yamlText!;
}

/**
 * The parsed document, from its JSON twin generated/openapi-v2.json (written by `make generate`,
 * kept equal by the drift check): JSON.parse takes a few ms where the YAML parse of openapi-v2.yaml
 * took ~0.2 s of every start (the adapter reads the paths when the app is built).
 */
export function v2Document(): Record<string, any> {
  if (!parsed) {
    const { 'x-generated': _marker, ...doc } = JSON.parse(fs.readFileSync(path.join(PROJECT_ROOT, 'generated', 'openapi-v2.json'), 'utf8')) as Record<string, any>;
    parsed = doc;
  }
  return structuredClone(parsed!);
}

let entities: Map<string, string> | undefined;

/** v2 singular entity name -> v3 catalog entity (`part` -> `parts`). */
export function v2Entities(): ReadonlyMap<string, string> {
  entities ??= new Map(Object.entries(v2Document().components.schemas.V2EntityName['x-v3-entities'] as Record<string, string>));
  return entities!;
}

/** v3 catalog entity -> v2 singular name. */
export function v2NameOf(v3Entity: string): string | undefined {
  for (const [v2, v3] of v2Entities()) if (v3 === v3Entity) return v2;
  return undefined;
}
