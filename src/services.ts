import type { Knex } from 'knex';
import type { Logger } from 'pino';
import type { Config } from './config';
import type { Engine } from './storage/database';
import { dialectFor, type Dialect } from './storage/dialect';
import { ApiKeyRepository } from './storage/api-keys';

/**
 * What the HTTP surface hands to the engines: built once at start, shared by every request.
 * Engines and storage add their pieces here; nothing else holds global state.
 */
export interface Services {
  config: Config;
  logger: Logger;
  knex: Knex;
  engine: Engine;
  dialect: Dialect;
  keys: ApiKeyRepository;
}

export function createServices(config: Config, logger: Logger, knex: Knex, engine: Engine): Services {
  return { config, logger, knex, engine, dialect: dialectFor(engine), keys: new ApiKeyRepository(knex) };
}
