import fs from 'node:fs';
import path from 'node:path';

/** Finds the project root from both src/ (tsx) and dist/src/ (built). */
function projectRoot(): string {
  let dir = __dirname;
  for (let i = 0; i < 6; i += 1) {
    if (fs.existsSync(path.join(dir, 'openapi.yaml')) && fs.existsSync(path.join(dir, 'package.json'))) return dir;
    dir = path.dirname(dir);
  }
  throw new Error('openapi.yaml not found above ' + __dirname);
}

export const PROJECT_ROOT = projectRoot();

let publicYaml: string | undefined;

/**
 * The document the request validator loads: the generated public document (its JSON twin), i.e. openapi.yaml
 * with the storage extensions stripped and the value bounds of every stored field added
 * (scripts/generate.ts; src/catalog/bounds.ts), so the validator refuses what a column cannot hold.
 */
export function contractDocument(): Record<string, any> {
  // The JSON twin of openapi.public.yaml (same generation): parsed in milliseconds, a fresh copy
  // each call (the validator mutates it) and none kept here: one copy fewer resident.
  const { 'x-generated': _marker, ...doc } = JSON.parse(fs.readFileSync(path.join(PROJECT_ROOT, 'generated', 'openapi.public.json'), 'utf8')) as Record<string, any>;
  return doc;
}

/** The public document served to integrators (generated, storage names stripped). */
export function publicDocumentYaml(): string {
  publicYaml ??= fs.readFileSync(path.join(PROJECT_ROOT, 'generated', 'openapi.public.yaml'), 'utf8');
  return publicYaml!;
}

/**
 * The public document as an object: its generated JSON twin (equal to the parsed YAML, kept so by
 * the generator's drift check). The YAML parser (72 modules) is not in the service's import graph.
 */
export function publicDocumentJson(): Record<string, unknown> {
  return contractDocument();
}
