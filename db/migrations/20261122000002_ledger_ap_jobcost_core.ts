/**
 * The ledger, accounts payable and job cost core (described column by column in docs/storage-core.md):
 * lgract, lgrbal, lgrtrn + lgtnln, source, lgrstp, fscprd, actpay, actrec, jobphs, cstcde, csttyp,
 * acpinv + apivln, jobcst. Money and quantities are exact decimals (see src/storage/dialect.ts).
 */
import type { Knex } from 'knex';
import { dec, applySteps, dropSteps, entityTable, lineTable, type TableStep } from './support/schema';

export const steps: TableStep[] = [
  entityTable('lgract', {}, (t) => {
    t.string('lngnme', 50).notNullable().defaultTo('');
    t.string('shtnme', 15).notNullable().defaultTo('');
    t.smallint('acttyp').notNullable().defaultTo(11);
    t.integer('sumact').nullable();
    t.integer('dptmnt').nullable();
    t.smallint('subtyp').notNullable().defaultTo(0);
    t.boolean('inactv').notNullable().defaultTo(false);
    t.text('ntetxt').nullable();
    t.index(['acttyp'], 'lgract_acttyp_idx');
  }),
  entityTable('lgrbal', {}, (t, knex) => {
    t.integer('lgract').notNullable();
    t.integer('postyr').notNullable();
    t.smallint('actprd').notNullable();
    dec(knex, t, 'dbttot', 14, 2).notNullable().defaultTo(0);
    dec(knex, t, 'crdtot', 14, 2).notNullable().defaultTo(0);
    t.foreign('lgract', 'lgrbal_lgract_fk').references('recnum').inTable('lgract');
    t.unique(['lgract', 'postyr', 'actprd'], { indexName: 'lgrbal_lgract_postyr_actprd_uq', useConstraint: true });
    t.index(['postyr', 'actprd'], 'lgrbal_postyr_actprd_idx');
  }),
  entityTable('source', {}, (t) => {
    t.string('srcnme', 50).notNullable().defaultTo('');
    t.string('abbrvn', 6).notNullable().defaultTo('');
    t.boolean('stdsrc').notNullable().defaultTo(false);
    t.boolean('inactv').notNullable().defaultTo(false);
  }),
  entityTable('lgrtrn', { transaction: true }, (t, knex) => {
    t.string('trnnum', 20).notNullable().defaultTo('');
    t.date('trndte').notNullable();
    t.string('dscrpt', 50).notNullable().defaultTo('');
    t.integer('srcnum').notNullable();
    t.smallint('status').notNullable().defaultTo(1);
    dec(knex, t, 'dbttot', 14, 2).notNullable().defaultTo(0);
    dec(knex, t, 'crdtot', 14, 2).notNullable().defaultTo(0);
    t.integer('revrec').nullable();
    t.foreign('srcnum', 'lgrtrn_srcnum_fk').references('recnum').inTable('source');
    t.index(['trnnum'], 'lgrtrn_trnnum_idx');
    t.index(['trndte'], 'lgrtrn_trndte_idx');
    t.index(['srcnum'], 'lgrtrn_srcnum_idx');
  }),
  lineTable('lgtnln', 'lgrtrn', (t, knex) => {
    t.integer('lgract').notNullable();
    t.string('dscrpt', 50).notNullable().defaultTo('');
    dec(knex, t, 'dbtamt', 14, 2).notNullable().defaultTo(0);
    dec(knex, t, 'crdamt', 14, 2).notNullable().defaultTo(0);
    t.integer('jobnum').nullable();
    t.integer('eqpnum').nullable();
    t.integer('dptmnt').nullable();
    t.foreign('lgract', 'lgtnln_lgract_fk').references('recnum').inTable('lgract');
    t.index(['lgract'], 'lgtnln_lgract_idx');
  }),
  entityTable('lgrstp', {}, (t) => {
    t.smallint('fscend').notNullable().defaultTo(12);
    t.integer('curyer').notNullable();
    t.smallint('curprd').notNullable().defaultTo(1);
    t.smallint('prdplc').notNullable().defaultTo(1);
    t.integer('apcact').nullable();
    t.integer('arcact').nullable();
    t.integer('cshact').nullable();
    t.integer('invact').nullable();
    t.integer('wipact').nullable();
    t.integer('dexact').nullable();
    t.integer('eqpact').nullable();
    t.integer('pylact').nullable();
    t.integer('rtpact').nullable();
    t.integer('rtract').nullable();
    t.integer('stxact').nullable();
    t.integer('srvact').nullable();
  }),
  entityTable('fscprd', {}, (t) => {
    t.integer('postyr').notNullable();
    t.smallint('actprd').notNullable();
    t.string('prdnme', 20).notNullable().defaultTo('');
    t.date('sttdte').nullable();
    t.date('enddte').nullable();
    t.smallint('status').notNullable().defaultTo(1);
    t.unique(['postyr', 'actprd'], { indexName: 'fscprd_postyr_actprd_uq', useConstraint: true });
  }),
  entityTable('actpay', {}, (t, knex) => {
    t.string('vndnme', 50).notNullable().defaultTo('');
    t.string('shtnme', 15).notNullable().defaultTo('');
    t.string('cntnme', 50).nullable();
    t.string('addrs1', 50).nullable();
    t.string('ctynme', 50).nullable();
    t.string('state_', 10).nullable();
    t.string('zipcde', 10).nullable();
    t.string('phnnum', 20).nullable();
    t.string('e_mail', 75).nullable();
    t.integer('vndtyp').nullable();
    t.integer('dftact').nullable();
    dec(knex, t, 'dftcde', 15, 3).nullable();
    t.integer('dfttyp').nullable();
    t.integer('duedys').notNullable().defaultTo(30);
    t.boolean('rpt199').notNullable().defaultTo(false);
    t.boolean('inactv').notNullable().defaultTo(false);
    t.index(['vndnme'], 'actpay_vndnme_idx');
    t.index(['shtnme'], 'actpay_shtnme_idx');
  }),
  entityTable('actrec', {}, (t, knex) => {
    t.string('jobnme', 50).notNullable().defaultTo('');
    t.string('shtnme', 15).notNullable().defaultTo('');
    t.integer('clnnum').nullable();
    t.smallint('status').notNullable().defaultTo(1);
    t.integer('jobtyp').nullable();
    t.string('addrs1', 50).nullable();
    t.string('ctynme', 50).nullable();
    t.string('state_', 10).nullable();
    t.string('zipcde', 10).nullable();
    t.integer('suprvr').nullable();
    dec(knex, t, 'cntrct', 14, 2).notNullable().defaultTo(0);
    dec(knex, t, 'retpct', 7, 4).notNullable().defaultTo(0);
    t.date('sttdte').nullable();
    t.date('cmpdte').nullable();
    t.integer('taxdst').nullable();
    t.index(['jobnme'], 'actrec_jobnme_idx');
    t.index(['shtnme'], 'actrec_shtnme_idx');
    t.index(['clnnum'], 'actrec_clnnum_idx');
    t.index(['status'], 'actrec_status_idx');
  }),
  entityTable('jobphs', {}, (t, knex) => {
    t.integer('jobnum').notNullable();
    t.integer('phsnum').notNullable();
    t.string('phsnme', 50).notNullable().defaultTo('');
    t.smallint('status').notNullable().defaultTo(1);
    t.date('sttdte').nullable();
    t.date('fnhdte').nullable();
    dec(knex, t, 'cntrct', 14, 2).notNullable().defaultTo(0);
    t.foreign('jobnum', 'jobphs_jobnum_fk').references('recnum').inTable('actrec');
    t.unique(['jobnum', 'phsnum'], { indexName: 'jobphs_jobnum_phsnum_uq', useConstraint: true });
  }),
  entityTable('cstcde', {}, (t, knex) => {
    dec(knex, t, 'cstcde', 15, 3).notNullable().defaultTo(0);
    t.string('cdenme', 50).notNullable().defaultTo('');
    t.string('untdsc', 8).nullable();
    t.integer('cstdiv').nullable();
    t.boolean('inactv').notNullable().defaultTo(false);
    t.unique(['cstcde'], { indexName: 'cstcde_cstcde_uq', useConstraint: true });
  }),
  entityTable('csttyp', {}, (t) => {
    t.string('typnme', 30).notNullable().defaultTo('');
    t.string('abbrvn', 6).notNullable().defaultTo('');
    t.boolean('preset').notNullable().defaultTo(false);
    t.boolean('inactv').notNullable().defaultTo(false);
  }),
  entityTable('acpinv', { transaction: true, ledger: true }, (t, knex) => {
    t.integer('vndnum').notNullable();
    t.string('invnum', 20).notNullable().defaultTo('');
    t.date('invdte').notNullable();
    t.date('duedte').nullable();
    t.string('dscrpt', 50).notNullable().defaultTo('');
    t.integer('jobnum').nullable();
    t.integer('phsnum').nullable();
    t.string('ordnum', 20).nullable();
    dec(knex, t, 'invttl', 14, 2).notNullable().defaultTo(0);
    dec(knex, t, 'amtpad', 14, 2).notNullable().defaultTo(0);
    dec(knex, t, 'invbal', 14, 2).notNullable().defaultTo(0);
    dec(knex, t, 'retain', 14, 2).notNullable().defaultTo(0);
    dec(knex, t, 'taxamt', 14, 2).notNullable().defaultTo(0);
    t.smallint('status').notNullable().defaultTo(1);
    t.foreign('vndnum', 'acpinv_vndnum_fk').references('recnum').inTable('actpay');
    t.index(['invdte'], 'acpinv_invdte_idx');
    t.index(['duedte'], 'acpinv_duedte_idx');
    t.index(['jobnum'], 'acpinv_jobnum_idx');
    t.index(['status'], 'acpinv_status_idx');
    t.index(['vndnum', 'invnum'], 'acpinv_vndnum_invnum_idx');
  }),
  lineTable('apivln', 'acpinv', (t, knex) => {
    t.integer('lgract').notNullable();
    t.string('dscrpt', 50).notNullable().defaultTo('');
    t.integer('jobnum').nullable();
    t.integer('phsnum').nullable();
    dec(knex, t, 'cstcde', 15, 3).nullable();
    t.integer('csttyp').nullable();
    t.integer('eqpnum').nullable();
    dec(knex, t, 'linqty', 14, 4).notNullable().defaultTo(0);
    dec(knex, t, 'linprc', 12, 4).notNullable().defaultTo(0);
    dec(knex, t, 'extttl', 14, 2).notNullable().defaultTo(0);
    dec(knex, t, 'taxamt', 14, 2).notNullable().defaultTo(0);
    t.foreign('lgract', 'apivln_lgract_fk').references('recnum').inTable('lgract');
    t.index(['lgract'], 'apivln_lgract_idx');
  }),
  entityTable('jobcst', { transaction: true }, (t, knex) => {
    t.integer('jobnum').notNullable();
    t.integer('phsnum').nullable();
    dec(knex, t, 'cstcde', 15, 3).notNullable().defaultTo(0);
    t.integer('csttyp').notNullable();
    t.date('trndte').notNullable();
    t.string('dscrpt', 50).notNullable().defaultTo('');
    t.integer('srcnum').notNullable();
    t.string('docnum', 20).nullable();
    t.integer('srcrec').nullable();
    t.integer('srclin').nullable();
    t.integer('vndnum').nullable();
    t.integer('empnum').nullable();
    t.integer('eqpnum').nullable();
    dec(knex, t, 'cstamt', 14, 2).notNullable().defaultTo(0);
    dec(knex, t, 'csthrs', 10, 2).notNullable().defaultTo(0);
    t.smallint('status').notNullable().defaultTo(1);
    t.foreign('jobnum', 'jobcst_jobnum_fk').references('recnum').inTable('actrec');
    t.index(['trndte'], 'jobcst_trndte_idx');
    t.index(['jobnum', 'cstcde'], 'jobcst_jobnum_cstcde_idx');
    t.index(['jobnum', 'phsnum', 'cstcde', 'csttyp'], 'jobcst_jobnum_phsnum_cstcde_csttyp_idx');
    t.index(['srcnum', 'srcrec'], 'jobcst_srcnum_srcrec_idx');
  }),
];

export async function up(knex: Knex): Promise<void> {
  await applySteps(knex, steps);
}

export async function down(knex: Knex): Promise<void> {
  await dropSteps(knex, steps);
}
