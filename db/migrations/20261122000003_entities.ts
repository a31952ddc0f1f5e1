/**
 * The remaining entity tables (vendors and clients, receivables, purchasing, inventory, project documents,
 * payroll, service management, equipment, banking and tax), each with its line table where the entity has
 * a child collection. Same conventions as the core migration (docs/storage-core.md); the published names of
 * every column are in openapi.yaml (x-column) and generated/catalog.ts.
 */
import type { Knex } from 'knex';
import { dec, applySteps, dropSteps, entityTable, lineTable, type TableStep } from './support/schema';

export const steps: TableStep[] = [
  entityTable('reccln', {}, (t, knex) => {
    t.string('clnnme', 50).notNullable().defaultTo('');
    t.string('shtnme', 15).notNullable().defaultTo('');
    t.string('cntnme', 50).nullable();
    t.string('addrs1', 50).nullable();
    t.string('ctynme', 50).nullable();
    t.string('state_', 10).nullable();
    t.string('zipcde', 10).nullable();
    t.string('phnnum', 20).nullable();
    t.string('e_mail', 75).nullable();
    t.integer('clntyp').nullable();
    t.integer('taxdst').nullable();
    t.integer('duedys').notNullable().defaultTo(30);
    dec(knex, t, 'crdlmt', 14, 2).notNullable().defaultTo(0);
    t.boolean('inactv').notNullable().defaultTo(false);
    t.index(['clnnme'], 'reccln_clnnme_idx');
    t.index(['shtnme'], 'reccln_shtnme_idx');
  }),
  entityTable('vndcnt', {}, (t) => {
    t.integer('vndnum').notNullable();
    t.string('cntnme', 50).notNullable().defaultTo('');
    t.string('jobttl', 30).nullable();
    t.string('phnnum', 20).nullable();
    t.string('cllphn', 20).nullable();
    t.string('e_mail', 75).nullable();
    t.boolean('prmcnt').notNullable().defaultTo(false);
    t.foreign('vndnum', 'vndcnt_vndnum_fk').references('recnum').inTable('actpay');
    t.index(['vndnum'], 'vndcnt_vndnum_idx');
  }),
  entityTable('clncnt', {}, (t) => {
    t.integer('clnnum').notNullable();
    t.string('cntnme', 50).notNullable().defaultTo('');
    t.string('jobttl', 30).nullable();
    t.string('phnnum', 20).nullable();
    t.string('cllphn', 20).nullable();
    t.string('e_mail', 75).nullable();
    t.boolean('prmcnt').notNullable().defaultTo(false);
    t.foreign('clnnum', 'clncnt_clnnum_fk').references('recnum').inTable('reccln');
    t.index(['clnnum'], 'clncnt_clnnum_idx');
  }),
  entityTable('vndtyp', {}, (t) => {
    t.string('typnme', 30).notNullable().defaultTo('');
    t.integer('lgract').nullable();
    t.boolean('rpt199').notNullable().defaultTo(false);
    t.boolean('inactv').notNullable().defaultTo(false);
  }),
  entityTable('clntyp', {}, (t) => {
    t.string('typnme', 30).notNullable().defaultTo('');
    t.string('dscrpt', 50).notNullable().defaultTo('');
    t.integer('duedys').nullable();
    t.boolean('inactv').notNullable().defaultTo(false);
  }),
  entityTable('dptmnt', {}, (t) => {
    t.string('dptnme', 50).notNullable().defaultTo('');
    t.integer('mgrnum').nullable();
    t.integer('lgract').nullable();
    t.boolean('inactv').notNullable().defaultTo(false);
  }),
  entityTable('lgrbdg', {}, (t, knex) => {
    t.integer('lgract').notNullable();
    t.integer('postyr').notNullable();
    t.smallint('actprd').notNullable();
    dec(knex, t, 'bdgamt', 14, 2).notNullable().defaultTo(0);
    dec(knex, t, 'revamt', 14, 2).notNullable().defaultTo(0);
    t.text('ntetxt').nullable();
    t.foreign('lgract', 'lgrbdg_lgract_fk').references('recnum').inTable('lgract');
    t.unique(['lgract', 'postyr', 'actprd'], { indexName: 'lgrbdg_lgract_postyr_actprd_uq', useConstraint: true });
  }),
  entityTable('acppmt', { transaction: true, ledger: true }, (t, knex) => {
    t.integer('vndnum').notNullable();
    t.string('chknum', 20).notNullable().defaultTo('');
    t.date('chkdte').notNullable();
    t.integer('bnkact').nullable();
    t.string('dscrpt', 50).notNullable().defaultTo('');
    dec(knex, t, 'amount', 14, 2).notNullable().defaultTo(0);
    dec(knex, t, 'dsctkn', 14, 2).notNullable().defaultTo(0);
    t.smallint('pmtmth').notNullable().defaultTo(1);
    t.smallint('status').notNullable().defaultTo(1);
    t.foreign('vndnum', 'acppmt_vndnum_fk').references('recnum').inTable('actpay');
    t.index(['vndnum'], 'acppmt_vndnum_idx');
    t.index(['chknum'], 'acppmt_chknum_idx');
    t.index(['chkdte'], 'acppmt_chkdte_idx');
  }),
  lineTable('apmtln', 'acppmt', (t, knex) => {
    t.integer('invrec').notNullable();
    t.string('invnum', 20).notNullable().defaultTo('');
    dec(knex, t, 'amtpad', 14, 2).notNullable().defaultTo(0);
    dec(knex, t, 'dsctkn', 14, 2).notNullable().defaultTo(0);
    dec(knex, t, 'retpad', 14, 2).notNullable().defaultTo(0);
  }),
  entityTable('acrinv', { transaction: true, ledger: true }, (t, knex) => {
    t.integer('clnnum').notNullable();
    t.integer('jobnum').nullable();
    t.string('invnum', 20).notNullable().defaultTo('');
    t.date('invdte').notNullable();
    t.date('duedte').nullable();
    t.string('dscrpt', 50).notNullable().defaultTo('');
    t.smallint('invtyp').notNullable().defaultTo(1);
    dec(knex, t, 'invttl', 14, 2).notNullable().defaultTo(0);
    dec(knex, t, 'amtpad', 14, 2).notNullable().defaultTo(0);
    dec(knex, t, 'invbal', 14, 2).notNullable().defaultTo(0);
    dec(knex, t, 'retain', 14, 2).notNullable().defaultTo(0);
    dec(knex, t, 'taxamt', 14, 2).notNullable().defaultTo(0);
    t.smallint('status').notNullable().defaultTo(1);
    t.foreign('clnnum', 'acrinv_clnnum_fk').references('recnum').inTable('reccln');
    t.index(['clnnum'], 'acrinv_clnnum_idx');
    t.index(['jobnum'], 'acrinv_jobnum_idx');
    t.index(['invnum'], 'acrinv_invnum_idx');
    t.index(['invdte'], 'acrinv_invdte_idx');
    t.index(['duedte'], 'acrinv_duedte_idx');
    t.index(['status'], 'acrinv_status_idx');
  }),
  lineTable('arivln', 'acrinv', (t, knex) => {
    t.string('dscrpt', 50).notNullable().defaultTo('');
    t.integer('lgract').nullable();
    t.integer('phsnum').nullable();
    dec(knex, t, 'cstcde', 15, 3).nullable();
    dec(knex, t, 'linqty', 14, 4).notNullable().defaultTo(0);
    dec(knex, t, 'linprc', 12, 4).notNullable().defaultTo(0);
    dec(knex, t, 'extttl', 14, 2).notNullable().defaultTo(0);
    dec(knex, t, 'retain', 14, 2).notNullable().defaultTo(0);
    t.boolean('taxabl').notNullable().defaultTo(false);
  }),
  entityTable('acrpmt', { transaction: true, ledger: true }, (t, knex) => {
    t.integer('clnnum').notNullable();
    t.integer('invrec').nullable();
    t.string('invnum', 20).nullable();
    t.integer('jobnum').nullable();
    t.string('chknum', 20).nullable();
    t.date('pmtdte').notNullable();
    t.string('dscrpt', 50).notNullable().defaultTo('');
    dec(knex, t, 'amount', 14, 2).notNullable().defaultTo(0);
    dec(knex, t, 'dsctkn', 14, 2).notNullable().defaultTo(0);
    dec(knex, t, 'retrcv', 14, 2).notNullable().defaultTo(0);
    t.integer('lgract').nullable();
    t.smallint('status').notNullable().defaultTo(1);
    t.foreign('clnnum', 'acrpmt_clnnum_fk').references('recnum').inTable('reccln');
    t.index(['clnnum'], 'acrpmt_clnnum_idx');
    t.index(['invrec'], 'acrpmt_invrec_idx');
    t.index(['pmtdte'], 'acrpmt_pmtdte_idx');
  }),
  entityTable('prgbll', {}, (t, knex) => {
    t.integer('jobnum').notNullable();
    t.integer('clnnum').nullable();
    t.string('aplnum', 20).notNullable().defaultTo('');
    t.date('blgdte').notNullable();
    t.date('prdend').nullable();
    t.string('dscrpt', 50).notNullable().defaultTo('');
    dec(knex, t, 'cntrct', 14, 2).notNullable().defaultTo(0);
    dec(knex, t, 'ttlcmp', 14, 2).notNullable().defaultTo(0);
    dec(knex, t, 'retain', 14, 2).notNullable().defaultTo(0);
    dec(knex, t, 'prvbll', 14, 2).notNullable().defaultTo(0);
    dec(knex, t, 'amtdue', 14, 2).notNullable().defaultTo(0);
    t.smallint('status').notNullable().defaultTo(1);
    t.integer('invrec').nullable();
    t.foreign('jobnum', 'prgbll_jobnum_fk').references('recnum').inTable('actrec');
    t.index(['jobnum'], 'prgbll_jobnum_idx');
    t.index(['blgdte'], 'prgbll_blgdte_idx');
  }),
  lineTable('prgbln', 'prgbll', (t, knex) => {
    t.string('itmnum', 10).notNullable().defaultTo('');
    t.string('dscrpt', 50).notNullable().defaultTo('');
    t.integer('phsnum').nullable();
    dec(knex, t, 'cstcde', 15, 3).nullable();
    dec(knex, t, 'schval', 14, 2).notNullable().defaultTo(0);
    dec(knex, t, 'prvcmp', 14, 2).notNullable().defaultTo(0);
    dec(knex, t, 'cmpprd', 14, 2).notNullable().defaultTo(0);
    dec(knex, t, 'strmat', 14, 2).notNullable().defaultTo(0);
    dec(knex, t, 'pctcmp', 7, 4).notNullable().defaultTo(0);
    dec(knex, t, 'retain', 14, 2).notNullable().defaultTo(0);
  }),
  entityTable('pchtyp', {}, (t) => {
    t.string('typnme', 30).notNullable().defaultTo('');
    t.string('dscrpt', 50).notNullable().defaultTo('');
    t.boolean('atocls').notNullable().defaultTo(false);
    t.boolean('inactv').notNullable().defaultTo(false);
  }),
  entityTable('pchord', {}, (t, knex) => {
    t.string('ordnum', 20).notNullable().defaultTo('');
    t.date('orddte').notNullable();
    t.integer('vndnum').notNullable();
    t.integer('jobnum').nullable();
    t.integer('phsnum').nullable();
    t.string('dscrpt', 50).notNullable().defaultTo('');
    t.integer('ordtyp').nullable();
    t.date('deldte').nullable();
    t.integer('locnum').nullable();
    dec(knex, t, 'ordttl', 14, 2).notNullable().defaultTo(0);
    dec(knex, t, 'rcvttl', 14, 2).notNullable().defaultTo(0);
    dec(knex, t, 'taxamt', 14, 2).notNullable().defaultTo(0);
    t.smallint('status').notNullable().defaultTo(1);
    t.foreign('vndnum', 'pchord_vndnum_fk').references('recnum').inTable('actpay');
    t.unique(['ordnum'], { indexName: 'pchord_ordnum_uq', useConstraint: true });
    t.index(['orddte'], 'pchord_orddte_idx');
    t.index(['vndnum'], 'pchord_vndnum_idx');
    t.index(['jobnum'], 'pchord_jobnum_idx');
    t.index(['status'], 'pchord_status_idx');
  }),
  lineTable('pcorln', 'pchord', (t, knex) => {
    t.integer('prtnum').nullable();
    t.string('dscrpt', 50).notNullable().defaultTo('');
    t.integer('lgract').nullable();
    dec(knex, t, 'cstcde', 15, 3).nullable();
    t.integer('csttyp').nullable();
    t.string('untdsc', 8).nullable();
    dec(knex, t, 'linqty', 14, 4).notNullable().defaultTo(0);
    dec(knex, t, 'linprc', 12, 4).notNullable().defaultTo(0);
    dec(knex, t, 'extttl', 14, 2).notNullable().defaultTo(0);
    dec(knex, t, 'rcvdte', 14, 4).notNullable().defaultTo(0);
    dec(knex, t, 'cancel', 14, 4).notNullable().defaultTo(0);
  }),
  entityTable('subcon', {}, (t, knex) => {
    t.integer('vndnum').notNullable();
    t.integer('jobnum').notNullable();
    t.string('ctcnum', 20).notNullable().defaultTo('');
    t.date('ctcdte').notNullable();
    t.string('dscrpt', 50).notNullable().defaultTo('');
    dec(knex, t, 'orgamt', 14, 2).notNullable().defaultTo(0);
    dec(knex, t, 'chgamt', 14, 2).notNullable().defaultTo(0);
    dec(knex, t, 'ctcttl', 14, 2).notNullable().defaultTo(0);
    dec(knex, t, 'blddte', 14, 2).notNullable().defaultTo(0);
    dec(knex, t, 'retpct', 7, 4).notNullable().defaultTo(0);
    dec(knex, t, 'retain', 14, 2).notNullable().defaultTo(0);
    t.date('insexp').nullable();
    t.smallint('status').notNullable().defaultTo(1);
    t.foreign('vndnum', 'subcon_vndnum_fk').references('recnum').inTable('actpay');
    t.foreign('jobnum', 'subcon_jobnum_fk').references('recnum').inTable('actrec');
    t.index(['vndnum'], 'subcon_vndnum_idx');
    t.index(['jobnum'], 'subcon_jobnum_idx');
    t.index(['ctcnum'], 'subcon_ctcnum_idx');
  }),
  lineTable('sbcnln', 'subcon', (t, knex) => {
    t.string('dscrpt', 50).notNullable().defaultTo('');
    t.integer('phsnum').nullable();
    dec(knex, t, 'cstcde', 15, 3).nullable();
    t.integer('csttyp').nullable();
    dec(knex, t, 'schval', 14, 2).notNullable().defaultTo(0);
    dec(knex, t, 'blddte', 14, 2).notNullable().defaultTo(0);
    dec(knex, t, 'retain', 14, 2).notNullable().defaultTo(0);
  }),
  entityTable('lenwvr', {}, (t, knex) => {
    t.integer('vndnum').notNullable();
    t.integer('jobnum').nullable();
    t.integer('ctcrec').nullable();
    t.smallint('wvrtyp').notNullable().defaultTo(1);
    t.date('thrdte').notNullable();
    dec(knex, t, 'amount', 14, 2).notNullable().defaultTo(0);
    t.date('rcvdat').nullable();
    t.smallint('status').notNullable().defaultTo(1);
    t.foreign('vndnum', 'lenwvr_vndnum_fk').references('recnum').inTable('actpay');
    t.index(['vndnum'], 'lenwvr_vndnum_idx');
  }),
  entityTable('prtcls', {}, (t) => {
    t.string('clsnme', 50).notNullable().defaultTo('');
    t.integer('prncls').nullable();
    t.integer('csttyp').nullable();
    t.boolean('inactv').notNullable().defaultTo(false);
  }),
  entityTable('tkfprt', {}, (t, knex) => {
    t.string('prtcde', 30).notNullable().defaultTo('');
    t.string('prtnme', 50).notNullable().defaultTo('');
    t.string('dscrpt', 50).notNullable().defaultTo('');
    t.string('prtunt', 8).notNullable().defaultTo('');
    t.integer('prtcls').nullable();
    dec(knex, t, 'prtcst', 12, 4).notNullable().defaultTo(0);
    dec(knex, t, 'avgcst', 12, 4).notNullable().defaultTo(0);
    dec(knex, t, 'lstcst', 12, 4).notNullable().defaultTo(0);
    dec(knex, t, 'bilprc', 12, 4).notNullable().defaultTo(0);
    t.string('mannme', 30).nullable();
    t.string('manprt', 30).nullable();
    t.integer('vndnum').nullable();
    dec(knex, t, 'cstcde', 15, 3).nullable();
    t.integer('csttyp').nullable();
    dec(knex, t, 'minqty', 14, 4).notNullable().defaultTo(0);
    t.string('brcode', 30).nullable();
    t.boolean('inactv').notNullable().defaultTo(false);
    t.unique(['prtcde'], { indexName: 'tkfprt_prtcde_uq', useConstraint: true });
    t.index(['prtnme'], 'tkfprt_prtnme_idx');
    t.index(['prtcls'], 'tkfprt_prtcls_idx');
    t.index(['prtcst'], 'tkfprt_prtcst_idx');
  }),
  entityTable('vndprc', {}, (t, knex) => {
    t.integer('vndnum').notNullable();
    t.integer('prtnum').notNullable();
    t.string('vndprt', 30).nullable();
    dec(knex, t, 'untprc', 12, 4).notNullable().defaultTo(0);
    t.string('prcunt', 8).nullable();
    dec(knex, t, 'minqty', 14, 4).notNullable().defaultTo(0);
    t.integer('leddys').nullable();
    t.date('effdte').nullable();
    t.boolean('prfvnd').notNullable().defaultTo(false);
    t.foreign('vndnum', 'vndprc_vndnum_fk').references('recnum').inTable('actpay');
    t.foreign('prtnum', 'vndprc_prtnum_fk').references('recnum').inTable('tkfprt');
    t.unique(['vndnum', 'prtnum'], { indexName: 'vndprc_vndnum_prtnum_uq', useConstraint: true });
    t.index(['prtnum'], 'vndprc_prtnum_idx');
  }),
  entityTable('asmcls', {}, (t) => {
    t.string('clsnme', 50).notNullable().defaultTo('');
    t.integer('prncls').nullable();
    t.string('dscrpt', 50).notNullable().defaultTo('');
    t.boolean('inactv').notNullable().defaultTo(false);
  }),
  entityTable('tkfasm', {}, (t, knex) => {
    t.string('asmcde', 30).notNullable().defaultTo('');
    t.string('asmnme', 50).notNullable().defaultTo('');
    t.integer('asmcls').nullable();
    t.string('asmunt', 8).notNullable().defaultTo('');
    dec(knex, t, 'ttlcst', 12, 4).notNullable().defaultTo(0);
    dec(knex, t, 'bilprc', 12, 4).notNullable().defaultTo(0);
    dec(knex, t, 'labhrs', 10, 2).notNullable().defaultTo(0);
    dec(knex, t, 'cstcde', 15, 3).nullable();
    t.boolean('inactv').notNullable().defaultTo(false);
    t.unique(['asmcde'], { indexName: 'tkfasm_asmcde_uq', useConstraint: true });
    t.index(['asmcls'], 'tkfasm_asmcls_idx');
  }),
  lineTable('asmprt', 'tkfasm', (t, knex) => {
    t.integer('prtnum').notNullable();
    t.string('dscrpt', 50).notNullable().defaultTo('');
    dec(knex, t, 'prtqty', 14, 4).notNullable().defaultTo(0);
    dec(knex, t, 'untcst', 12, 4).notNullable().defaultTo(0);
    dec(knex, t, 'extcst', 14, 2).notNullable().defaultTo(0);
    t.foreign('prtnum', 'asmprt_prtnum_fk').references('recnum').inTable('tkfprt');
    t.index(['prtnum'], 'asmprt_prtnum_idx');
  }),
  entityTable('invloc', {}, (t) => {
    t.string('locnme', 50).notNullable().defaultTo('');
    t.smallint('loctyp').notNullable().defaultTo(1);
    t.string('addrs1', 50).nullable();
    t.string('ctynme', 50).nullable();
    t.string('state_', 10).nullable();
    t.string('zipcde', 10).nullable();
    t.integer('jobnum').nullable();
    t.integer('lgract').nullable();
    t.boolean('inactv').notNullable().defaultTo(false);
  }),
  entityTable('invqty', {}, (t, knex) => {
    t.integer('prtnum').notNullable();
    t.integer('locnum').notNullable();
    dec(knex, t, 'qtyohn', 14, 4).notNullable().defaultTo(0);
    dec(knex, t, 'qtyavl', 14, 4).notNullable().defaultTo(0);
    dec(knex, t, 'qtyord', 14, 4).notNullable().defaultTo(0);
    dec(knex, t, 'minqty', 14, 4).notNullable().defaultTo(0);
    dec(knex, t, 'maxqty', 14, 4).notNullable().defaultTo(0);
    t.string('binloc', 20).nullable();
    dec(knex, t, 'avgcst', 12, 4).notNullable().defaultTo(0);
    t.foreign('prtnum', 'invqty_prtnum_fk').references('recnum').inTable('tkfprt');
    t.foreign('locnum', 'invqty_locnum_fk').references('recnum').inTable('invloc');
    t.unique(['prtnum', 'locnum'], { indexName: 'invqty_prtnum_locnum_uq', useConstraint: true });
    t.index(['locnum'], 'invqty_locnum_idx');
  }),
  entityTable('invbal', {}, (t, knex) => {
    t.integer('prtnum').notNullable();
    t.integer('locnum').notNullable();
    t.integer('postyr').notNullable();
    t.smallint('actprd').notNullable();
    dec(knex, t, 'balqty', 14, 4).notNullable().defaultTo(0);
    dec(knex, t, 'balval', 14, 2).notNullable().defaultTo(0);
    dec(knex, t, 'avgcst', 12, 4).notNullable().defaultTo(0);
    t.foreign('prtnum', 'invbal_prtnum_fk').references('recnum').inTable('tkfprt');
    t.unique(['prtnum', 'locnum', 'postyr', 'actprd'], { indexName: 'invbal_prtnum_locnum_postyr_actprd_uq', useConstraint: true });
    t.index(['postyr', 'actprd'], 'invbal_postyr_actprd_idx');
  }),
  entityTable('hstavg', {}, (t, knex) => {
    t.integer('prtnum').notNullable();
    t.date('chgdte').notNullable();
    dec(knex, t, 'prvavg', 12, 4).notNullable().defaultTo(0);
    dec(knex, t, 'newavg', 12, 4).notNullable().defaultTo(0);
    dec(knex, t, 'qtyohn', 14, 4).notNullable().defaultTo(0);
    t.integer('srcnum').nullable();
    t.integer('srcrec').nullable();
    t.foreign('prtnum', 'hstavg_prtnum_fk').references('recnum').inTable('tkfprt');
    t.index(['prtnum'], 'hstavg_prtnum_idx');
    t.index(['chgdte'], 'hstavg_chgdte_idx');
  }),
  entityTable('invalc', { transaction: true, ledger: true }, (t, knex) => {
    t.date('trndte').notNullable();
    t.string('dscrpt', 50).notNullable().defaultTo('');
    t.smallint('prpose').notNullable().defaultTo(2);
    t.integer('frmloc').nullable();
    t.integer('tolocn').nullable();
    t.integer('jobnum').nullable();
    t.integer('phsnum').nullable();
    dec(knex, t, 'ttlcst', 14, 2).notNullable().defaultTo(0);
    t.smallint('status').notNullable().defaultTo(1);
    t.index(['trndte'], 'invalc_trndte_idx');
    t.index(['frmloc'], 'invalc_frmloc_idx');
    t.index(['jobnum'], 'invalc_jobnum_idx');
  }),
  lineTable('invaln', 'invalc', (t, knex) => {
    t.integer('prtnum').notNullable();
    t.string('dscrpt', 50).notNullable().defaultTo('');
    dec(knex, t, 'alcqty', 14, 4).notNullable().defaultTo(0);
    dec(knex, t, 'untcst', 12, 4).notNullable().defaultTo(0);
    dec(knex, t, 'extcst', 14, 2).notNullable().defaultTo(0);
    dec(knex, t, 'cstcde', 15, 3).nullable();
    t.integer('csttyp').nullable();
    t.foreign('prtnum', 'invaln_prtnum_fk').references('recnum').inTable('tkfprt');
    t.index(['prtnum'], 'invaln_prtnum_idx');
  }),
  entityTable('invcsm', { transaction: true }, (t, knex) => {
    t.integer('prtnum').notNullable();
    t.integer('locnum').nullable();
    t.integer('jobnum').notNullable();
    t.integer('phsnum').nullable();
    dec(knex, t, 'cstcde', 15, 3).nullable();
    t.integer('csttyp').nullable();
    t.date('trndte').notNullable();
    dec(knex, t, 'csmqty', 14, 4).notNullable().defaultTo(0);
    dec(knex, t, 'untcst', 12, 4).notNullable().defaultTo(0);
    dec(knex, t, 'extcst', 14, 2).notNullable().defaultTo(0);
    t.integer('alcrec').nullable();
    t.integer('jcsrec').nullable();
    t.foreign('prtnum', 'invcsm_prtnum_fk').references('recnum').inTable('tkfprt');
    t.index(['prtnum'], 'invcsm_prtnum_idx');
    t.index(['jobnum'], 'invcsm_jobnum_idx');
    t.index(['trndte'], 'invcsm_trndte_idx');
  }),
  entityTable('invhst', { transaction: true }, (t, knex) => {
    t.integer('prtnum').notNullable();
    t.integer('locnum').notNullable();
    t.date('trndte').notNullable();
    t.smallint('mvttyp').notNullable().defaultTo(1);
    dec(knex, t, 'hstqty', 14, 4).notNullable().defaultTo(0);
    dec(knex, t, 'untcst', 12, 4).notNullable().defaultTo(0);
    dec(knex, t, 'extcst', 14, 2).notNullable().defaultTo(0);
    dec(knex, t, 'balqty', 14, 4).notNullable().defaultTo(0);
    t.integer('srcnum').notNullable();
    t.integer('srcrec').nullable();
    t.foreign('prtnum', 'invhst_prtnum_fk').references('recnum').inTable('tkfprt');
    t.index(['trndte'], 'invhst_trndte_idx');
    t.index(['prtnum', 'locnum'], 'invhst_prtnum_locnum_idx');
  }),
  entityTable('invsrl', {}, (t, knex) => {
    t.integer('prtnum').notNullable();
    t.string('serial', 50).notNullable().defaultTo('');
    t.integer('locnum').nullable();
    t.smallint('status').notNullable().defaultTo(1);
    t.date('rcvdat').nullable();
    t.string('ordnum', 20).nullable();
    dec(knex, t, 'untcst', 12, 4).notNullable().defaultTo(0);
    t.integer('jobnum').nullable();
    t.date('wrnend').nullable();
    t.foreign('prtnum', 'invsrl_prtnum_fk').references('recnum').inTable('tkfprt');
    t.index(['prtnum'], 'invsrl_prtnum_idx');
    t.index(['serial'], 'invsrl_serial_idx');
  }),
  entityTable('jobtyp', {}, (t, knex) => {
    t.string('typnme', 30).notNullable().defaultTo('');
    t.string('dscrpt', 50).notNullable().defaultTo('');
    dec(knex, t, 'retpct', 7, 4).notNullable().defaultTo(0);
    t.boolean('inactv').notNullable().defaultTo(false);
  }),
  entityTable('cstdiv', {}, (t, knex) => {
    t.string('divnme', 50).notNullable().defaultTo('');
    dec(knex, t, 'frmcde', 15, 3).notNullable().defaultTo(0);
    dec(knex, t, 'thrcde', 15, 3).notNullable().defaultTo(0);
    t.boolean('inactv').notNullable().defaultTo(false);
  }),
  entityTable('bdgmst', {}, (t, knex) => {
    t.integer('jobnum').notNullable();
    t.string('bdgnme', 30).notNullable().defaultTo('');
    t.smallint('bdgtyp').notNullable().defaultTo(1);
    t.string('dscrpt', 50).notNullable().defaultTo('');
    dec(knex, t, 'ttlbdg', 14, 2).notNullable().defaultTo(0);
    dec(knex, t, 'ttlhrs', 10, 2).notNullable().defaultTo(0);
    t.date('aprdte').nullable();
    t.smallint('status').notNullable().defaultTo(1);
    t.foreign('jobnum', 'bdgmst_jobnum_fk').references('recnum').inTable('actrec');
    t.index(['jobnum'], 'bdgmst_jobnum_idx');
  }),
  lineTable('bdglin', 'bdgmst', (t, knex) => {
    t.integer('phsnum').nullable();
    dec(knex, t, 'cstcde', 15, 3).notNullable().defaultTo(0);
    t.string('dscrpt', 50).notNullable().defaultTo('');
    dec(knex, t, 'bdgqty', 14, 4).notNullable().defaultTo(0);
    t.string('untdsc', 8).nullable();
    dec(knex, t, 'hrsbdg', 10, 2).notNullable().defaultTo(0);
    dec(knex, t, 'matbdg', 14, 2).notNullable().defaultTo(0);
    dec(knex, t, 'labbdg', 14, 2).notNullable().defaultTo(0);
    dec(knex, t, 'eqpbdg', 14, 2).notNullable().defaultTo(0);
    dec(knex, t, 'subbdg', 14, 2).notNullable().defaultTo(0);
    dec(knex, t, 'othbdg', 14, 2).notNullable().defaultTo(0);
    dec(knex, t, 'ttlbdg', 14, 2).notNullable().defaultTo(0);
    t.index(['cstcde'], 'bdglin_cstcde_idx');
  }),
  entityTable('prmchg', {}, (t, knex) => {
    t.integer('jobnum').notNullable();
    t.string('chgnum', 20).notNullable().defaultTo('');
    t.date('chgdte').notNullable();
    t.string('dscrpt', 50).notNullable().defaultTo('');
    t.smallint('chgtyp').notNullable().defaultTo(1);
    t.integer('ctcrec').nullable();
    t.string('reason', 50).nullable();
    dec(knex, t, 'reqamt', 14, 2).notNullable().defaultTo(0);
    dec(knex, t, 'apramt', 14, 2).notNullable().defaultTo(0);
    t.date('aprdte').nullable();
    t.integer('schdys').nullable();
    t.smallint('status').notNullable().defaultTo(2);
    t.foreign('jobnum', 'prmchg_jobnum_fk').references('recnum').inTable('actrec');
    t.index(['chgdte'], 'prmchg_chgdte_idx');
    t.index(['status'], 'prmchg_status_idx');
    t.index(['jobnum', 'chgnum'], 'prmchg_jobnum_chgnum_idx');
  }),
  lineTable('sbcgln', 'prmchg', (t, knex) => {
    t.string('dscrpt', 50).notNullable().defaultTo('');
    t.integer('phsnum').nullable();
    dec(knex, t, 'cstcde', 15, 3).nullable();
    t.integer('csttyp').nullable();
    dec(knex, t, 'chgqty', 14, 4).notNullable().defaultTo(0);
    t.string('untdsc', 8).nullable();
    dec(knex, t, 'untprc', 12, 4).notNullable().defaultTo(0);
    dec(knex, t, 'chgamt', 14, 2).notNullable().defaultTo(0);
    dec(knex, t, 'chghrs', 10, 2).notNullable().defaultTo(0);
    dec(knex, t, 'blgamt', 14, 2).notNullable().defaultTo(0);
  }),
  entityTable('cstcmp', {}, (t, knex) => {
    t.integer('jobnum').notNullable();
    t.date('estdte').notNullable();
    t.string('dscrpt', 50).notNullable().defaultTo('');
    t.string('prpusr', 30).nullable();
    dec(knex, t, 'cstdte', 14, 2).notNullable().defaultTo(0);
    dec(knex, t, 'cmtamt', 14, 2).notNullable().defaultTo(0);
    dec(knex, t, 'estcmp', 14, 2).notNullable().defaultTo(0);
    dec(knex, t, 'prjcst', 14, 2).notNullable().defaultTo(0);
    dec(knex, t, 'bdgamt', 14, 2).notNullable().defaultTo(0);
    t.smallint('status').notNullable().defaultTo(1);
    t.foreign('jobnum', 'cstcmp_jobnum_fk').references('recnum').inTable('actrec');
    t.index(['jobnum'], 'cstcmp_jobnum_idx');
    t.index(['estdte'], 'cstcmp_estdte_idx');
  }),
  lineTable('cstcln', 'cstcmp', (t, knex) => {
    t.integer('phsnum').nullable();
    dec(knex, t, 'cstcde', 15, 3).notNullable().defaultTo(0);
    t.integer('csttyp').nullable();
    dec(knex, t, 'cstdte', 14, 2).notNullable().defaultTo(0);
    dec(knex, t, 'cmtamt', 14, 2).notNullable().defaultTo(0);
    dec(knex, t, 'estcmp', 14, 2).notNullable().defaultTo(0);
    dec(knex, t, 'prjcst', 14, 2).notNullable().defaultTo(0);
    dec(knex, t, 'bdgamt', 14, 2).notNullable().defaultTo(0);
    dec(knex, t, 'pctcmp', 7, 4).notNullable().defaultTo(0);
  }),
  entityTable('hrscmp', {}, (t, knex) => {
    t.integer('jobnum').notNullable();
    t.date('estdte').notNullable();
    t.string('dscrpt', 50).notNullable().defaultTo('');
    t.string('prpusr', 30).nullable();
    dec(knex, t, 'hrsdte', 10, 2).notNullable().defaultTo(0);
    dec(knex, t, 'hrsest', 10, 2).notNullable().defaultTo(0);
    dec(knex, t, 'prjhrs', 10, 2).notNullable().defaultTo(0);
    dec(knex, t, 'bdghrs', 10, 2).notNullable().defaultTo(0);
    t.smallint('status').notNullable().defaultTo(1);
    t.foreign('jobnum', 'hrscmp_jobnum_fk').references('recnum').inTable('actrec');
    t.index(['jobnum'], 'hrscmp_jobnum_idx');
    t.index(['estdte'], 'hrscmp_estdte_idx');
  }),
  lineTable('hrscln', 'hrscmp', (t, knex) => {
    t.integer('phsnum').nullable();
    dec(knex, t, 'cstcde', 15, 3).notNullable().defaultTo(0);
    dec(knex, t, 'hrsdte', 10, 2).notNullable().defaultTo(0);
    dec(knex, t, 'hrsest', 10, 2).notNullable().defaultTo(0);
    dec(knex, t, 'prjhrs', 10, 2).notNullable().defaultTo(0);
    dec(knex, t, 'bdghrs', 10, 2).notNullable().defaultTo(0);
    dec(knex, t, 'pctcmp', 7, 4).notNullable().defaultTo(0);
  }),
  entityTable('untcmp', {}, (t) => {
    t.integer('jobnum').notNullable();
    t.date('rptdte').notNullable();
    t.string('dscrpt', 50).notNullable().defaultTo('');
    t.string('prpusr', 30).nullable();
    t.smallint('status').notNullable().defaultTo(1);
    t.foreign('jobnum', 'untcmp_jobnum_fk').references('recnum').inTable('actrec');
    t.index(['jobnum'], 'untcmp_jobnum_idx');
    t.index(['rptdte'], 'untcmp_rptdte_idx');
  }),
  lineTable('untcln', 'untcmp', (t, knex) => {
    t.integer('phsnum').nullable();
    dec(knex, t, 'cstcde', 15, 3).notNullable().defaultTo(0);
    t.string('untdsc', 8).nullable();
    dec(knex, t, 'bdgunt', 14, 4).notNullable().defaultTo(0);
    dec(knex, t, 'untdte', 14, 4).notNullable().defaultTo(0);
    dec(knex, t, 'untprd', 14, 4).notNullable().defaultTo(0);
    dec(knex, t, 'pctcmp', 7, 4).notNullable().defaultTo(0);
  }),
  entityTable('propsl', {}, (t, knex) => {
    t.integer('clnnum').nullable();
    t.integer('jobnum').nullable();
    t.date('prpdte').notNullable();
    t.string('dscrpt', 50).notNullable().defaultTo('');
    dec(knex, t, 'prpamt', 14, 2).notNullable().defaultTo(0);
    dec(knex, t, 'estcst', 14, 2).notNullable().defaultTo(0);
    dec(knex, t, 'mrkpct', 7, 4).notNullable().defaultTo(0);
    t.date('expdte').nullable();
    t.integer('slsnum').nullable();
    t.smallint('status').notNullable().defaultTo(1);
    t.index(['clnnum'], 'propsl_clnnum_idx');
    t.index(['prpdte'], 'propsl_prpdte_idx');
  }),
  lineTable('prplin', 'propsl', (t, knex) => {
    t.string('dscrpt', 50).notNullable().defaultTo('');
    dec(knex, t, 'cstcde', 15, 3).nullable();
    t.integer('csttyp').nullable();
    dec(knex, t, 'linqty', 14, 4).notNullable().defaultTo(0);
    t.string('untdsc', 8).nullable();
    dec(knex, t, 'linprc', 12, 4).notNullable().defaultTo(0);
    dec(knex, t, 'extttl', 14, 2).notNullable().defaultTo(0);
  }),
  entityTable('employ', {}, (t, knex) => {
    t.string('lstnme', 30).notNullable().defaultTo('');
    t.string('fstnme', 30).notNullable().defaultTo('');
    t.string('addrs1', 50).nullable();
    t.string('ctynme', 50).nullable();
    t.string('state_', 10).nullable();
    t.string('zipcde', 10).nullable();
    t.string('phnnum', 20).nullable();
    t.string('e_mail', 75).nullable();
    t.date('dtebth').nullable();
    t.date('dtehre').nullable();
    t.date('dtetrm').nullable();
    t.smallint('status').notNullable().defaultTo(1);
    t.smallint('paytyp').notNullable().defaultTo(1);
    dec(knex, t, 'payrt1', 12, 4).notNullable().defaultTo(0);
    dec(knex, t, 'salary', 14, 2).notNullable().defaultTo(0);
    t.integer('paygrp').nullable();
    t.integer('dptmnt').nullable();
    t.integer('wkrcmp').nullable();
    t.string('pstion', 30).nullable();
    t.index(['lstnme'], 'employ_lstnme_idx');
  }),
  entityTable('paygrp', {}, (t, knex) => {
    t.string('grpnme', 50).notNullable().defaultTo('');
    dec(knex, t, 'payrt1', 12, 4).notNullable().defaultTo(0);
    dec(knex, t, 'payrt2', 12, 4).notNullable().defaultTo(0);
    dec(knex, t, 'payrt3', 12, 4).notNullable().defaultTo(0);
    t.integer('wkrcmp').nullable();
    t.integer('unnnum').nullable();
    dec(knex, t, 'cstcde', 15, 3).nullable();
    t.boolean('inactv').notNullable().defaultTo(false);
  }),
  entityTable('jobpgp', {}, (t, knex) => {
    t.integer('jobnum').notNullable();
    t.integer('paygrp').notNullable();
    dec(knex, t, 'payrt1', 12, 4).notNullable().defaultTo(0);
    dec(knex, t, 'payrt2', 12, 4).notNullable().defaultTo(0);
    dec(knex, t, 'payrt3', 12, 4).notNullable().defaultTo(0);
    dec(knex, t, 'frnrte', 12, 4).notNullable().defaultTo(0);
    t.date('effdte').nullable();
    t.foreign('jobnum', 'jobpgp_jobnum_fk').references('recnum').inTable('actrec');
    t.unique(['jobnum', 'paygrp'], { indexName: 'jobpgp_jobnum_paygrp_uq', useConstraint: true });
  }),
  entityTable('wkrcmp', {}, (t, knex) => {
    t.string('cdenme', 50).notNullable().defaultTo('');
    t.string('state_', 10).nullable();
    t.string('clscde', 10).notNullable().defaultTo('');
    dec(knex, t, 'cmprte', 12, 4).notNullable().defaultTo(0);
    dec(knex, t, 'expmod', 12, 4).notNullable().defaultTo(0);
    t.boolean('inactv').notNullable().defaultTo(false);
  }),
  entityTable('unnrec', {}, (t) => {
    t.string('unnnme', 50).notNullable().defaultTo('');
    t.string('lclnum', 10).nullable();
    t.string('cntnme', 50).nullable();
    t.string('phnnum', 20).nullable();
    t.integer('vndnum').nullable();
    t.boolean('inactv').notNullable().defaultTo(false);
  }),
  entityTable('loctax', {}, (t, knex) => {
    t.string('taxnme', 50).notNullable().defaultTo('');
    t.string('athrty', 50).nullable();
    t.string('state_', 10).nullable();
    dec(knex, t, 'taxrte', 12, 4).notNullable().defaultTo(0);
    dec(knex, t, 'emprte', 12, 4).notNullable().defaultTo(0);
    dec(knex, t, 'maxwge', 14, 2).notNullable().defaultTo(0);
    t.integer('lgract').nullable();
    t.boolean('inactv').notNullable().defaultTo(false);
  }),
  entityTable('paycal', {}, (t, knex) => {
    t.string('calnme', 50).notNullable().defaultTo('');
    t.smallint('caltyp').notNullable().defaultTo(4);
    t.smallint('calmth').notNullable().defaultTo(1);
    dec(knex, t, 'calrte', 12, 4).notNullable().defaultTo(0);
    dec(knex, t, 'maxwge', 14, 2).notNullable().defaultTo(0);
    dec(knex, t, 'maxamt', 14, 2).notNullable().defaultTo(0);
    t.integer('lblact').nullable();
    t.integer('expact').nullable();
    t.integer('vndnum').nullable();
    t.boolean('inactv').notNullable().defaultTo(false);
  }),
  entityTable('payded', {}, (t, knex) => {
    t.integer('empnum').notNullable();
    t.integer('calnum').notNullable();
    t.string('dscrpt', 50).notNullable().defaultTo('');
    dec(knex, t, 'dedamt', 14, 2).notNullable().defaultTo(0);
    dec(knex, t, 'dedrte', 12, 4).notNullable().defaultTo(0);
    dec(knex, t, 'maxamt', 14, 2).notNullable().defaultTo(0);
    dec(knex, t, 'ytdamt', 14, 2).notNullable().defaultTo(0);
    t.date('sttdte').nullable();
    t.date('enddte').nullable();
    t.boolean('inactv').notNullable().defaultTo(false);
    t.foreign('empnum', 'payded_empnum_fk').references('recnum').inTable('employ');
    t.index(['empnum'], 'payded_empnum_idx');
  }),
  entityTable('benfit', {}, (t, knex) => {
    t.integer('empnum').notNullable();
    t.integer('calnum').nullable();
    t.string('bnfnme', 50).notNullable().defaultTo('');
    dec(knex, t, 'bnfrte', 12, 4).notNullable().defaultTo(0);
    dec(knex, t, 'maxamt', 14, 2).notNullable().defaultTo(0);
    dec(knex, t, 'ytdamt', 14, 2).notNullable().defaultTo(0);
    t.date('sttdte').nullable();
    t.date('enddte').nullable();
    t.boolean('inactv').notNullable().defaultTo(false);
    t.foreign('empnum', 'benfit_empnum_fk').references('recnum').inTable('employ');
    t.index(['empnum'], 'benfit_empnum_idx');
  }),
  entityTable('empern', {}, (t, knex) => {
    t.integer('empnum').notNullable();
    t.integer('postyr').notNullable();
    t.smallint('qtrnum').notNullable();
    dec(knex, t, 'reghrs', 10, 2).notNullable().defaultTo(0);
    dec(knex, t, 'ovthrs', 10, 2).notNullable().defaultTo(0);
    dec(knex, t, 'grspay', 14, 2).notNullable().defaultTo(0);
    dec(knex, t, 'fedwth', 14, 2).notNullable().defaultTo(0);
    dec(knex, t, 'stawth', 14, 2).notNullable().defaultTo(0);
    dec(knex, t, 'socsec', 14, 2).notNullable().defaultTo(0);
    dec(knex, t, 'medcre', 14, 2).notNullable().defaultTo(0);
    dec(knex, t, 'netpay', 14, 2).notNullable().defaultTo(0);
    t.foreign('empnum', 'empern_empnum_fk').references('recnum').inTable('employ');
    t.unique(['empnum', 'postyr', 'qtrnum'], { indexName: 'empern_empnum_postyr_qtrnum_uq', useConstraint: true });
  }),
  entityTable('payrec', { transaction: true, ledger: true }, (t, knex) => {
    t.integer('empnum').notNullable();
    t.string('chknum', 20).nullable();
    t.date('chkdte').notNullable();
    t.date('prdbeg').nullable();
    t.date('prdend').notNullable();
    dec(knex, t, 'reghrs', 10, 2).notNullable().defaultTo(0);
    dec(knex, t, 'ovthrs', 10, 2).notNullable().defaultTo(0);
    dec(knex, t, 'prmhrs', 10, 2).notNullable().defaultTo(0);
    dec(knex, t, 'grspay', 14, 2).notNullable().defaultTo(0);
    dec(knex, t, 'dedttl', 14, 2).notNullable().defaultTo(0);
    dec(knex, t, 'netpay', 14, 2).notNullable().defaultTo(0);
    t.smallint('status').notNullable().defaultTo(1);
    t.foreign('empnum', 'payrec_empnum_fk').references('recnum').inTable('employ');
    t.index(['empnum'], 'payrec_empnum_idx');
    t.index(['chkdte'], 'payrec_chkdte_idx');
    t.index(['prdend'], 'payrec_prdend_idx');
    t.index(['status'], 'payrec_status_idx');
  }),
  lineTable('tmcdln', 'payrec', (t, knex) => {
    t.date('wrkdte').nullable();
    t.integer('jobnum').nullable();
    t.integer('phsnum').nullable();
    dec(knex, t, 'cstcde', 15, 3).nullable();
    t.integer('eqpnum').nullable();
    t.smallint('paytyp').notNullable().defaultTo(1);
    dec(knex, t, 'hrswrk', 10, 2).notNullable().defaultTo(0);
    dec(knex, t, 'payrte', 12, 4).notNullable().defaultTo(0);
    dec(knex, t, 'amount', 14, 2).notNullable().defaultTo(0);
    t.integer('wkrcmp').nullable();
    t.string('dscrpt', 50).notNullable().defaultTo('');
    t.index(['jobnum'], 'tmcdln_jobnum_idx');
  }),
  entityTable('paychk', { transaction: true, ledger: true }, (t, knex) => {
    t.integer('empnum').notNullable();
    t.integer('payrec').nullable();
    t.string('chknum', 20).notNullable().defaultTo('');
    t.date('chkdte').notNullable();
    t.date('prdbeg').nullable();
    t.date('prdend').nullable();
    dec(knex, t, 'grspay', 14, 2).notNullable().defaultTo(0);
    dec(knex, t, 'dedttl', 14, 2).notNullable().defaultTo(0);
    dec(knex, t, 'netpay', 14, 2).notNullable().defaultTo(0);
    t.integer('bnkact').nullable();
    t.boolean('drcdep').notNullable().defaultTo(false);
    t.smallint('status').notNullable().defaultTo(1);
    t.foreign('empnum', 'paychk_empnum_fk').references('recnum').inTable('employ');
    t.index(['empnum'], 'paychk_empnum_idx');
    t.index(['chknum'], 'paychk_chknum_idx');
    t.index(['chkdte'], 'paychk_chkdte_idx');
  }),
  lineTable('pyckln', 'paychk', (t, knex) => {
    t.smallint('lintyp').notNullable().defaultTo(1);
    t.integer('calnum').nullable();
    t.string('dscrpt', 50).notNullable().defaultTo('');
    dec(knex, t, 'hrswrk', 10, 2).notNullable().defaultTo(0);
    dec(knex, t, 'payrte', 12, 4).notNullable().defaultTo(0);
    dec(knex, t, 'amount', 14, 2).notNullable().defaultTo(0);
    dec(knex, t, 'ytdamt', 14, 2).notNullable().defaultTo(0);
  }),
  entityTable('tmcard', {}, (t, knex) => {
    t.integer('empnum').notNullable();
    t.date('wekend').notNullable();
    dec(knex, t, 'ttlhrs', 10, 2).notNullable().defaultTo(0);
    t.string('aprusr', 30).nullable();
    t.integer('payrec').nullable();
    t.smallint('status').notNullable().defaultTo(1);
    t.foreign('empnum', 'tmcard_empnum_fk').references('recnum').inTable('employ');
    t.index(['empnum'], 'tmcard_empnum_idx');
    t.index(['wekend'], 'tmcard_wekend_idx');
  }),
  lineTable('tmcrln', 'tmcard', (t, knex) => {
    t.date('wrkdte').notNullable();
    t.integer('jobnum').nullable();
    t.integer('phsnum').nullable();
    dec(knex, t, 'cstcde', 15, 3).nullable();
    t.integer('eqpnum').nullable();
    t.smallint('paytyp').notNullable().defaultTo(1);
    dec(knex, t, 'hrswrk', 10, 2).notNullable().defaultTo(0);
    t.string('dscrpt', 50).notNullable().defaultTo('');
  }),
  entityTable('dlypyr', { transaction: true }, (t, knex) => {
    t.integer('jobnum').notNullable();
    t.date('wrkdte').notNullable();
    t.integer('frmnum').nullable();
    t.string('dscrpt', 50).notNullable().defaultTo('');
    dec(knex, t, 'ttlhrs', 10, 2).notNullable().defaultTo(0);
    t.smallint('status').notNullable().defaultTo(1);
    t.foreign('jobnum', 'dlypyr_jobnum_fk').references('recnum').inTable('actrec');
    t.index(['jobnum'], 'dlypyr_jobnum_idx');
    t.index(['wrkdte'], 'dlypyr_wrkdte_idx');
  }),
  lineTable('dlypln', 'dlypyr', (t, knex) => {
    t.integer('empnum').notNullable();
    t.integer('phsnum').nullable();
    dec(knex, t, 'cstcde', 15, 3).nullable();
    t.smallint('paytyp').notNullable().defaultTo(1);
    dec(knex, t, 'hrswrk', 10, 2).notNullable().defaultTo(0);
    dec(knex, t, 'payrte', 12, 4).notNullable().defaultTo(0);
    t.integer('eqpnum').nullable();
    dec(knex, t, 'eqphrs', 10, 2).notNullable().defaultTo(0);
  }),
  entityTable('srvtyp', {}, (t, knex) => {
    t.string('typnme', 30).notNullable().defaultTo('');
    t.string('dscrpt', 50).notNullable().defaultTo('');
    dec(knex, t, 'dfthrs', 10, 2).notNullable().defaultTo(0);
    t.integer('lgract').nullable();
    t.boolean('inactv').notNullable().defaultTo(false);
  }),
  entityTable('srvloc', {}, (t) => {
    t.integer('clnnum').notNullable();
    t.string('locnme', 50).notNullable().defaultTo('');
    t.string('addrs1', 50).nullable();
    t.string('ctynme', 50).nullable();
    t.string('state_', 10).nullable();
    t.string('zipcde', 10).nullable();
    t.string('cntnme', 50).nullable();
    t.string('phnnum', 20).nullable();
    t.integer('taxdst').nullable();
    t.text('ntetxt').nullable();
    t.boolean('inactv').notNullable().defaultTo(false);
    t.foreign('clnnum', 'srvloc_clnnum_fk').references('recnum').inTable('reccln');
    t.index(['clnnum'], 'srvloc_clnnum_idx');
  }),
  entityTable('srvivt', {}, (t) => {
    t.integer('clnnum').nullable();
    t.integer('srvloc').nullable();
    t.string('dscrpt', 50).notNullable().defaultTo('');
    t.string('mannme', 30).nullable();
    t.string('modnum', 30).nullable();
    t.string('serial', 50).nullable();
    t.integer('prtnum').nullable();
    t.date('insdat').nullable();
    t.date('wrnend').nullable();
    t.smallint('status').notNullable().defaultTo(1);
    t.index(['clnnum'], 'srvivt_clnnum_idx');
    t.index(['srvloc'], 'srvivt_srvloc_idx');
  }),
  entityTable('srvcon', {}, (t, knex) => {
    t.integer('clnnum').notNullable();
    t.integer('srvloc').nullable();
    t.string('dscrpt', 50).notNullable().defaultTo('');
    t.date('sttdte').notNullable();
    t.date('enddte').nullable();
    t.smallint('blgfrq').notNullable().defaultTo(1);
    dec(knex, t, 'cntrct', 14, 2).notNullable().defaultTo(0);
    dec(knex, t, 'blgamt', 14, 2).notNullable().defaultTo(0);
    t.date('nxtblg').nullable();
    t.smallint('status').notNullable().defaultTo(1);
    t.foreign('clnnum', 'srvcon_clnnum_fk').references('recnum').inTable('reccln');
    t.index(['clnnum'], 'srvcon_clnnum_idx');
  }),
  lineTable('srvcln', 'srvcon', (t, knex) => {
    t.integer('srvtyp').nullable();
    t.string('dscrpt', 50).notNullable().defaultTo('');
    t.integer('vstyer').notNullable().defaultTo(1);
    t.integer('srvivt').nullable();
    dec(knex, t, 'amount', 14, 2).notNullable().defaultTo(0);
  }),
  entityTable('srvinv', { transaction: true, ledger: true }, (t, knex) => {
    t.string('invnum', 20).notNullable().defaultTo('');
    t.date('invdte').notNullable();
    t.date('duedte').nullable();
    t.integer('clnnum').notNullable();
    t.integer('srvloc').nullable();
    t.integer('srvtyp').nullable();
    t.integer('srvcon').nullable();
    t.integer('empnum').nullable();
    t.string('dscrpt', 50).notNullable().defaultTo('');
    t.smallint('wrksts').notNullable().defaultTo(1);
    dec(knex, t, 'invttl', 14, 2).notNullable().defaultTo(0);
    dec(knex, t, 'taxamt', 14, 2).notNullable().defaultTo(0);
    dec(knex, t, 'amtpad', 14, 2).notNullable().defaultTo(0);
    dec(knex, t, 'invbal', 14, 2).notNullable().defaultTo(0);
    t.smallint('status').notNullable().defaultTo(1);
    t.foreign('clnnum', 'srvinv_clnnum_fk').references('recnum').inTable('reccln');
    t.index(['invnum'], 'srvinv_invnum_idx');
    t.index(['invdte'], 'srvinv_invdte_idx');
    t.index(['clnnum'], 'srvinv_clnnum_idx');
  }),
  lineTable('srvlin', 'srvinv', (t, knex) => {
    t.smallint('lintyp').notNullable().defaultTo(1);
    t.integer('prtnum').nullable();
    t.string('dscrpt', 50).notNullable().defaultTo('');
    dec(knex, t, 'linqty', 14, 4).notNullable().defaultTo(0);
    dec(knex, t, 'linprc', 12, 4).notNullable().defaultTo(0);
    dec(knex, t, 'untcst', 12, 4).notNullable().defaultTo(0);
    dec(knex, t, 'extttl', 14, 2).notNullable().defaultTo(0);
    t.boolean('taxabl').notNullable().defaultTo(false);
    t.integer('lgract').nullable();
  }),
  entityTable('srvsch', {}, (t, knex) => {
    t.integer('srvrec').nullable();
    t.integer('empnum').nullable();
    t.integer('srvloc').nullable();
    t.datetime('schstt').notNullable();
    t.datetime('schend').nullable();
    dec(knex, t, 'esthrs', 10, 2).notNullable().defaultTo(0);
    t.string('dscrpt', 50).notNullable().defaultTo('');
    t.smallint('status').notNullable().defaultTo(1);
    t.index(['srvrec'], 'srvsch_srvrec_idx');
    t.index(['empnum'], 'srvsch_empnum_idx');
    t.index(['schstt'], 'srvsch_schstt_idx');
  }),
  entityTable('srvpmt', { transaction: true, ledger: true }, (t, knex) => {
    t.integer('clnnum').notNullable();
    t.integer('invrec').notNullable();
    t.string('invnum', 20).nullable();
    t.date('pmtdte').notNullable();
    t.string('chknum', 20).nullable();
    t.smallint('pmtmth').notNullable().defaultTo(1);
    dec(knex, t, 'amount', 14, 2).notNullable().defaultTo(0);
    t.integer('lgract').nullable();
    t.smallint('status').notNullable().defaultTo(1);
    t.foreign('clnnum', 'srvpmt_clnnum_fk').references('recnum').inTable('reccln');
    t.index(['clnnum'], 'srvpmt_clnnum_idx');
    t.index(['invrec'], 'srvpmt_invrec_idx');
    t.index(['pmtdte'], 'srvpmt_pmtdte_idx');
  }),
  entityTable('eqptyp', {}, (t, knex) => {
    t.string('typnme', 30).notNullable().defaultTo('');
    t.string('dscrpt', 50).notNullable().defaultTo('');
    dec(knex, t, 'cstcde', 15, 3).nullable();
    dec(knex, t, 'hrlrte', 12, 4).notNullable().defaultTo(0);
    t.boolean('inactv').notNullable().defaultTo(false);
  }),
  entityTable('eqpmnt', {}, (t, knex) => {
    t.string('eqpnme', 50).notNullable().defaultTo('');
    t.integer('eqptyp').nullable();
    t.string('mannme', 30).nullable();
    t.string('modnum', 30).nullable();
    t.integer('yrmdl').nullable();
    t.string('serial', 50).nullable();
    t.string('lcnnum', 20).nullable();
    t.date('prcdte').nullable();
    dec(knex, t, 'prccst', 14, 2).notNullable().defaultTo(0);
    t.integer('jobnum').nullable();
    dec(knex, t, 'hrsmtr', 10, 2).notNullable().defaultTo(0);
    t.smallint('status').notNullable().defaultTo(1);
    t.index(['eqpnme'], 'eqpmnt_eqpnme_idx');
  }),
  entityTable('eqprte', {}, (t, knex) => {
    t.integer('eqpnum').notNullable();
    t.date('effdte').notNullable();
    dec(knex, t, 'hrlrte', 12, 4).notNullable().defaultTo(0);
    dec(knex, t, 'dlyrte', 12, 4).notNullable().defaultTo(0);
    dec(knex, t, 'wklrte', 12, 4).notNullable().defaultTo(0);
    dec(knex, t, 'mthrte', 12, 4).notNullable().defaultTo(0);
    t.boolean('oprinc').notNullable().defaultTo(false);
    t.foreign('eqpnum', 'eqprte_eqpnum_fk').references('recnum').inTable('eqpmnt');
    t.unique(['eqpnum', 'effdte'], { indexName: 'eqprte_eqpnum_effdte_uq', useConstraint: true });
  }),
  entityTable('eqpcst', { transaction: true }, (t, knex) => {
    t.integer('eqpnum').notNullable();
    t.date('trndte').notNullable();
    t.smallint('cstcat').notNullable().defaultTo(6);
    t.string('dscrpt', 50).notNullable().defaultTo('');
    t.integer('srcnum').notNullable();
    t.string('docnum', 20).nullable();
    t.integer('srcrec').nullable();
    t.integer('srclin').nullable();
    t.integer('vndnum').nullable();
    t.integer('lgract').nullable();
    dec(knex, t, 'cstamt', 14, 2).notNullable().defaultTo(0);
    dec(knex, t, 'csthrs', 10, 2).notNullable().defaultTo(0);
    t.smallint('status').notNullable().defaultTo(1);
    t.foreign('eqpnum', 'eqpcst_eqpnum_fk').references('recnum').inTable('eqpmnt');
    t.index(['eqpnum'], 'eqpcst_eqpnum_idx');
    t.index(['trndte'], 'eqpcst_trndte_idx');
    t.index(['srcnum', 'srcrec'], 'eqpcst_srcnum_srcrec_idx');
  }),
  entityTable('eqprev', { transaction: true, ledger: true }, (t, knex) => {
    t.integer('eqpnum').notNullable();
    t.integer('jobnum').notNullable();
    t.integer('phsnum').nullable();
    dec(knex, t, 'cstcde', 15, 3).nullable();
    t.date('trndte').notNullable();
    t.string('dscrpt', 50).notNullable().defaultTo('');
    t.smallint('rtetyp').notNullable().defaultTo(1);
    dec(knex, t, 'revunt', 10, 2).notNullable().defaultTo(0);
    dec(knex, t, 'revrte', 12, 4).notNullable().defaultTo(0);
    dec(knex, t, 'revamt', 14, 2).notNullable().defaultTo(0);
    t.integer('srcnum').notNullable().defaultTo(33);
    t.foreign('eqpnum', 'eqprev_eqpnum_fk').references('recnum').inTable('eqpmnt');
    t.index(['eqpnum'], 'eqprev_eqpnum_idx');
    t.index(['jobnum'], 'eqprev_jobnum_idx');
    t.index(['trndte'], 'eqprev_trndte_idx');
  }),
  entityTable('bnkact', {}, (t, knex) => {
    t.string('actnme', 50).notNullable().defaultTo('');
    t.string('bnknme', 50).notNullable().defaultTo('');
    t.integer('lgract').notNullable();
    t.string('actlst', 4).nullable();
    t.string('rtenum', 9).nullable();
    t.integer('nxtchk').nullable();
    t.date('lstrec').nullable();
    dec(knex, t, 'lstbal', 14, 2).notNullable().defaultTo(0);
    t.boolean('inactv').notNullable().defaultTo(false);
    t.foreign('lgract', 'bnkact_lgract_fk').references('recnum').inTable('lgract');
    t.index(['lgract'], 'bnkact_lgract_idx');
  }),
  entityTable('bnktrn', { transaction: true, ledger: true }, (t, knex) => {
    t.integer('bnkact').notNullable();
    t.string('trnnum', 20).notNullable().defaultTo('');
    t.date('trndte').notNullable();
    t.smallint('trntyp').notNullable().defaultTo(1);
    t.string('payee_', 50).nullable();
    t.string('dscrpt', 50).notNullable().defaultTo('');
    dec(knex, t, 'depamt', 14, 2).notNullable().defaultTo(0);
    dec(knex, t, 'wdramt', 14, 2).notNullable().defaultTo(0);
    t.boolean('clrflg').notNullable().defaultTo(false);
    t.date('clrdte').nullable();
    t.integer('recrec').nullable();
    t.smallint('status').notNullable().defaultTo(1);
    t.foreign('bnkact', 'bnktrn_bnkact_fk').references('recnum').inTable('bnkact');
    t.index(['bnkact'], 'bnktrn_bnkact_idx');
    t.index(['trnnum'], 'bnktrn_trnnum_idx');
    t.index(['trndte'], 'bnktrn_trndte_idx');
  }),
  entityTable('bnkrec', {}, (t, knex) => {
    t.integer('bnkact').notNullable();
    t.date('stmdte').notNullable();
    dec(knex, t, 'begbal', 14, 2).notNullable().defaultTo(0);
    dec(knex, t, 'stmbal', 14, 2).notNullable().defaultTo(0);
    dec(knex, t, 'clrdep', 14, 2).notNullable().defaultTo(0);
    dec(knex, t, 'clrpmt', 14, 2).notNullable().defaultTo(0);
    dec(knex, t, 'dffrnc', 14, 2).notNullable().defaultTo(0);
    t.string('rcnusr', 30).nullable();
    t.date('rcndte').nullable();
    t.smallint('status').notNullable().defaultTo(1);
    t.foreign('bnkact', 'bnkrec_bnkact_fk').references('recnum').inTable('bnkact');
    t.index(['bnkact'], 'bnkrec_bnkact_idx');
    t.index(['stmdte'], 'bnkrec_stmdte_idx');
  }),
  lineTable('bkrcln', 'bnkrec', (t, knex) => {
    t.integer('trnrec').notNullable();
    t.date('trndte').nullable();
    t.string('trnnum', 20).nullable();
    t.string('dscrpt', 50).notNullable().defaultTo('');
    dec(knex, t, 'amount', 14, 2).notNullable().defaultTo(0);
    t.boolean('clrflg').notNullable().defaultTo(false);
  }),
  entityTable('crdiss', {}, (t, knex) => {
    t.string('issnme', 50).notNullable().defaultTo('');
    t.integer('vndnum').nullable();
    t.integer('lgract').nullable();
    t.string('crdlst', 4).nullable();
    dec(knex, t, 'crdlmt', 14, 2).notNullable().defaultTo(0);
    t.smallint('stmday').nullable();
    t.boolean('inactv').notNullable().defaultTo(false);
  }),
  entityTable('ccdrec', {}, (t, knex) => {
    t.integer('crdiss').notNullable();
    t.date('stmdte').notNullable();
    dec(knex, t, 'prvbal', 14, 2).notNullable().defaultTo(0);
    dec(knex, t, 'chgttl', 14, 2).notNullable().defaultTo(0);
    dec(knex, t, 'pmtttl', 14, 2).notNullable().defaultTo(0);
    dec(knex, t, 'stmbal', 14, 2).notNullable().defaultTo(0);
    t.integer('invrec').nullable();
    t.smallint('status').notNullable().defaultTo(1);
    t.foreign('crdiss', 'ccdrec_crdiss_fk').references('recnum').inTable('crdiss');
    t.index(['crdiss'], 'ccdrec_crdiss_idx');
    t.index(['stmdte'], 'ccdrec_stmdte_idx');
  }),
  lineTable('ccrcln', 'ccdrec', (t, knex) => {
    t.date('trndte').notNullable();
    t.string('mrchnt', 50).nullable();
    t.string('dscrpt', 50).notNullable().defaultTo('');
    t.integer('lgract').nullable();
    t.integer('jobnum').nullable();
    dec(knex, t, 'cstcde', 15, 3).nullable();
    t.integer('csttyp').nullable();
    dec(knex, t, 'amount', 14, 2).notNullable().defaultTo(0);
    t.boolean('clrflg').notNullable().defaultTo(false);
  }),
  entityTable('taxent', {}, (t, knex) => {
    t.string('entnme', 50).notNullable().defaultTo('');
    dec(knex, t, 'taxrte', 12, 4).notNullable().defaultTo(0);
    t.integer('vndnum').nullable();
    t.integer('lgract').nullable();
    t.string('rptidn', 20).nullable();
    t.boolean('inactv').notNullable().defaultTo(false);
  }),
  entityTable('taxdst', {}, (t, knex) => {
    t.string('dstnme', 50).notNullable().defaultTo('');
    t.integer('taxen1').nullable();
    t.integer('taxen2').nullable();
    t.integer('taxen3').nullable();
    dec(knex, t, 'taxrte', 12, 4).notNullable().defaultTo(0);
    t.boolean('taxmat').notNullable().defaultTo(false);
    t.boolean('taxlab').notNullable().defaultTo(false);
    t.boolean('inactv').notNullable().defaultTo(false);
  }),
];

export async function up(knex: Knex): Promise<void> {
  await applySteps(knex, steps);
}

export async function down(knex: Knex): Promise<void> {
  await dropSteps(knex, steps);
}
