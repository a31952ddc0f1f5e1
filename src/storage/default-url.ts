/**
 * The database used when DATABASE_URL is not set. Apart from ./database so that reading the
 * configuration does not load knex: a cluster primary forks its workers before it loads the
 * storage layer (start-up time).
 */
export const DEFAULT_DATABASE_URL = 'sqlite://./data/books.sqlite';
