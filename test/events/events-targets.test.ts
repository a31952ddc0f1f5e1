/**
 * Delivery targets (SSRF): every class of non-public address is refused by the classifier, and at
 * connect time after DNS resolution, so a name that resolved to a public address at registration
 * and to loopback later (DNS rebinding, a resolver stub here) gets no connection.
 */
import test, { after, before } from 'node:test';
import assert from 'node:assert/strict';
import net from 'node:net';
import type { AddressInfo } from 'node:net';
import { startTestApp, type TestApp } from '../support/app';
import { installEvents } from '../support/events';
import { addressRange, isPublicAddress } from '../../src/events/targets';
import { loadConfig } from '../../src/config';

let t: TestApp;
let listener: net.Server;
let port: number;
let connections = 0;

before(async () => {
  t = await startTestApp();
  // Anything that connects here is a leak past the guard.
  listener = net.createServer((s) => {
    connections++;
    s.destroy();
  });
  await new Promise<void>((r) => listener.listen(0, '127.0.0.1', r));
  port = (listener.address() as AddressInfo).port;
});
after(async () => {
  await new Promise((r) => listener.close(r));
  await t.close();
});

test('the classifier: only unicast (public) addresses pass', () => {
  const cases: Array<[string, string]> = [
    ['127.0.0.1', 'loopback'],
    ['127.8.9.10', 'loopback'],
    ['::1', 'loopback'],
    ['10.0.0.1', 'private'],
    ['172.31.255.255', 'private'],
    ['192.168.0.1', 'private'],
    ['169.254.169.254', 'linkLocal'],
    ['fe80::1', 'linkLocal'],
    ['fd00:ec2::254', 'uniqueLocal'],
    ['fc00::1', 'uniqueLocal'],
    ['100.64.0.1', 'carrierGradeNat'],
    ['100.127.255.254', 'carrierGradeNat'],
    ['0.0.0.0', 'unspecified'],
    ['::', 'unspecified'],
    ['224.0.0.1', 'multicast'],
    ['ff02::1', 'multicast'],
    ['255.255.255.255', 'broadcast'],
    ['240.0.0.1', 'reserved'],
    ['::ffff:10.0.0.1', 'private'],
    ['::ffff:169.254.169.254', 'linkLocal'],
  ];
  for (const [address, range] of cases) {
    assert.equal(addressRange(address), range, address);
    assert.equal(isPublicAddress(address), false, address);
  }
  for (const address of ['93.184.215.14', '8.8.8.8', '2606:4700:4700::1111', '::ffff:8.8.8.8']) assert.equal(isPublicAddress(address), true, address);
  assert.equal(isPublicAddress('not-an-ip'), false);
});

test('DNS rebinding: public at registration, loopback at delivery: refused at connect, nothing reaches loopback', async () => {
  const h = installEvents(t, { allowPrivate: false });
  let calls = 0;
  h.dns.set('rebind.example.com', () => (++calls === 1 ? ['93.184.215.14'] : ['127.0.0.1']));
  const res = await t.post('/api/v3/webhook-endpoints', { url: `https://rebind.example.com:${port}/hook`, eventTypes: ['payable_invoice.updated'] }, t.adminKey);
  assert.equal(res.status, 200, res.text);
  assert.equal(calls, 1, 'resolved once at registration');
  await t.post(`/api/v3/webhook-endpoints/${res.body.id}/test`, {}, t.adminKey);
  const cycle = await h.events.deliverNow();
  assert.equal(cycle.retried, 1);
  assert.ok(calls >= 2, 'resolved again when connecting');
  assert.equal(connections, 0);
  const d = await t.knex('whkdlv').where({ endpoint_id: res.body.id }).first();
  assert.equal(d.status, 'pending', 'retried later (the name may resolve to a public address again)');
  assert.match(d.last_error, /127\.0\.0\.1 is not public \(loopback\)/);
  const attempt = await t.knex('whkatt').where({ delivery_id: d.id }).first();
  assert.equal(attempt.status_code, null);
});

test('a stored private literal (registered while the development switch was on) is refused at delivery without connecting', async () => {
  const h = installEvents(t, { allowPrivate: true });
  const res = await t.post('/api/v3/webhook-endpoints', { url: `http://127.0.0.1:${port}/hook`, eventTypes: ['payable_invoice.updated'] }, t.adminKey);
  assert.equal(res.status, 200, res.text);
  const off = installEvents(t, { allowPrivate: false });
  void h;
  await t.post(`/api/v3/webhook-endpoints/${res.body.id}/test`, {}, t.adminKey);
  await off.events.deliverNow();
  assert.equal(connections, 0);
  const d = await t.knex('whkdlv').where({ endpoint_id: res.body.id }).first();
  assert.match(d.last_error, /refused target: url must be https/);
});

test('WEBHOOK_ALLOW_PRIVATE_TARGETS: off by default, parsed, and a warning is logged at start', async () => {
  assert.equal(loadConfig({}).webhookAllowPrivateTargets, false);
  assert.equal(loadConfig({}).eventDetectionIntervalSeconds, 300);
  assert.equal(loadConfig({ WEBHOOK_ALLOW_PRIVATE_TARGETS: 'true', EVENT_DETECTION_INTERVAL_SECONDS: '60' }).webhookAllowPrivateTargets, true);
  assert.throws(() => loadConfig({ EVENT_DETECTION_INTERVAL_SECONDS: '0' }), /EVENT_DETECTION_INTERVAL_SECONDS/);
  const h = installEvents(t, { allowPrivate: true });
  const before = t.logs.length;
  h.events.start();
  await h.events.stop();
  assert.ok(t.logs.slice(before).some((l) => l.level === 40 && /WEBHOOK_ALLOW_PRIVATE_TARGETS/.test(l.msg)));
});
