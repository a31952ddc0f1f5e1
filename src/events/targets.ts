import dns from 'node:dns';
import net from 'node:net';
import ipaddr from 'ipaddr.js';

/**
 * Where deliveries may go (the spec's Events rule 7): https URLs on public addresses only. An
 * address is public when ipaddr.js classifies it `unicast`: loopback, private, link-local (and
 * the 169.254.169.254 metadata address), unique-local, carrier-grade NAT, multicast, reserved,
 * documentation, 6to4/Teredo and the rest of its special ranges are refused. IPv4-mapped IPv6
 * addresses are judged as the IPv4 address they carry.
 *
 * Checked when an endpoint is registered and again on every connection, after DNS resolution
 * (`guardedLookup`), so a name that resolves to a public address at registration and to a
 * private one later (DNS rebinding) is refused at connect time.
 *
 * WEBHOOK_ALLOW_PRIVATE_TARGETS (development only) allows http and every address.
 */

export type Resolver = (hostname: string) => Promise<Array<{ address: string; family: number }>>;

export const systemResolver: Resolver = (hostname) => dns.promises.lookup(hostname, { all: true, verbatim: true });

export class TargetRefused extends Error {
  constructor(
    message: string,
    readonly reason: string,
  ) {
    super(message);
  }
}

/** The ipaddr.js range of `address` ('unicast' when public). */
export function addressRange(address: string): string {
  let ip = ipaddr.parse(address);
  if (ip.kind() === 'ipv6') {
    const v6 = ip as ipaddr.IPv6;
    if (v6.isIPv4MappedAddress()) ip = v6.toIPv4Address();
    // The deprecated IPv4-compatible form (::a.b.c.d, ::/96), which ipaddr.js calls unicast: judged
    // as the IPv4 address it carries (::7f00:1 is 127.0.0.1). :: and ::1 keep their own ranges.
    else if (v6.range() === 'unicast' && v6.parts.slice(0, 6).every((p) => p === 0)) {
      ip = ipaddr.fromByteArray(v6.toByteArray().slice(12));
    }
  }
  return ip.range();
}

export function isPublicAddress(address: string): boolean {
  return ipaddr.isValid(address) && addressRange(address) === 'unicast';
}

export interface TargetPolicy {
  allowPrivate: boolean;
  resolver: Resolver;
}

/**
 * The host as the URL parser normalised it (lower case, percent-decoding, IDNA, and IPv4 written as
 * one number, in octal or hex, or with fewer parts, made dotted: `https://2130706433/` is
 * 127.0.0.1), without IPv6 brackets and without the trailing dots of a fully qualified name
 * (`localhost.` is localhost).
 */
function hostOf(url: URL): string {
  return url.hostname.replace(/^\[(.*)\]$/, '$1').replace(/\.+$/, '');
}

/** Refuses a URL that is not https or whose host is (or resolves to) a non-public address. */
export async function checkTarget(raw: string, policy: TargetPolicy, options: { resolve?: boolean } = {}): Promise<URL> {
  let url: URL;
  try {
    url = new URL(raw);
  } catch {
    throw new TargetRefused('url is not an absolute URL.', 'invalid_url');
  }
  if (url.username || url.password) throw new TargetRefused('url must not carry credentials.', 'credentials');
  if (policy.allowPrivate) {
    if (url.protocol !== 'https:' && url.protocol !== 'http:') throw new TargetRefused('url must be http or https.', 'scheme');
    return url;
  }
  if (url.protocol !== 'https:') throw new TargetRefused('url must be https.', 'scheme');
  const host = hostOf(url);
  if (host === '') throw new TargetRefused('url has no host.', 'invalid_url');
  if (net.isIP(host)) {
    assertPublic(host);
    return url;
  }
  if (/^localhost$|\.localhost$/i.test(host)) throw new TargetRefused('url must not name localhost.', 'loopback');
  if (options.resolve === false) return url;
  let addresses: Array<{ address: string }> = [];
  try {
    addresses = await policy.resolver(host);
  } catch {
    // Not resolvable now: accepted (delivery resolves and checks again on every attempt).
    return url;
  }
  for (const a of addresses) assertPublic(a.address);
  return url;
}

function assertPublic(address: string): void {
  if (!ipaddr.isValid(address)) throw new TargetRefused(`${address} is not an IP address.`, 'invalid_address');
  const range = addressRange(address);
  if (range !== 'unicast') throw new TargetRefused(`The address ${address} is not public (${range}).`, range);
}

type LookupCallback = (err: NodeJS.ErrnoException | null, address: string | dns.LookupAddress[], family?: number) => void;

/**
 * A `lookup` for http(s).request: resolves with `resolver` and refuses unless every address is
 * public (or the development switch is on). Node calls it only for names; IP literals are
 * checked by `checkTarget` before the request is made.
 */
export function guardedLookup(policy: TargetPolicy) {
  return (hostname: string, options: dns.LookupOptions, callback: LookupCallback): void => {
    policy.resolver(hostname).then(
      (addresses) => {
        try {
          if (addresses.length === 0) throw new TargetRefused(`${hostname} did not resolve.`, 'unresolved');
          if (!policy.allowPrivate) for (const a of addresses) assertPublic(a.address);
        } catch (err) {
          callback(err as NodeJS.ErrnoException, '', 0);
          return;
        }
        const family = options?.family === 6 || options?.family === 4 ? options.family : undefined;
        const usable = family ? addresses.filter((a) => a.family === family) : addresses;
        if (options?.all) callback(null, usable.map((a) => ({ address: a.address, family: a.family })));
        else callback(null, usable[0]?.address ?? addresses[0]!.address, usable[0]?.family ?? addresses[0]!.family);
      },
      (err: NodeJS.ErrnoException) => callback(err, '', 0),
    );
  };
}

/**
 * A target as the audit log and the log lines keep it: the values of its query (often a token the
 * receiver checks, e.g. `?token=…`) and its fragment are not kept, the rest is. The subscription
 * itself keeps the whole url, shown only to the administrators who manage it.
 */
export function redactedTarget(raw: string): string {
  let url: URL;
  try {
    url = new URL(raw);
  } catch {
    return '(not a url)';
  }
  for (const name of [...new Set(url.searchParams.keys())]) url.searchParams.set(name, 'redacted');
  url.hash = '';
  return url.toString();
}
