// The per-address connection cap (issue 45): one client address holds at most
// PAYD_MAX_CONNECTIONS_PER_ADDRESS connections, so that it cannot take every one of the
// PAYD_MAX_CONNECTIONS slots (Node refuses those above the global cap before this runs).
// A connection over the cap is destroyed as it arrives, before a byte is read: the
// client sees its connection closed, as for the global cap. The address is the socket's
// own (the peer that connected: behind a reverse proxy, the proxy), never a header.
// IPv6 addresses count by their /64 (one host usually holds a whole /64); IPv4-mapped
// IPv6 addresses count as the IPv4 address.
import type { Server } from 'node:net';
import type { Socket } from 'node:net';

/** The address a connection counts against. */
export function connectionAddress(remote: string | undefined): string {
  if (!remote) return '';
  if (remote.startsWith('::ffff:') && remote.includes('.')) return remote.slice(7);
  if (!remote.includes(':')) return remote;
  // An IPv6 address: its first four groups (expanding a :: among them).
  const [head = '', tail] = remote.split('::');
  const groups = head ? head.split(':') : [];
  if (tail !== undefined && groups.length < 4) {
    const rest = tail ? tail.split(':') : [];
    const missing = 8 - groups.length - rest.length;
    groups.push(...Array<string>(Math.max(0, missing)).fill('0'), ...rest);
  }
  return `${groups.slice(0, 4).map((g) => g.toLowerCase().replace(/^0+(?=.)/, '')).join(':')}::/64`;
}

export interface ConnectionCap {
  /** Connections refused for the cap since the start. */
  refused(): number;
  /** Open connections by address (tests, metrics). */
  open(address: string): number;
}

/** Caps the connections each address holds on server; perAddress 0 turns the cap off. */
export function capConnectionsPerAddress(server: Server, perAddress: number): ConnectionCap {
  const open = new Map<string, number>();
  let refused = 0;
  if (perAddress > 0) {
    server.on('connection', (socket: Socket) => {
      const address = connectionAddress(socket.remoteAddress);
      const n = open.get(address) ?? 0;
      if (n >= perAddress) {
        refused++;
        socket.destroy();
        return;
      }
      open.set(address, n + 1);
      socket.once('close', () => {
        const left = (open.get(address) ?? 1) - 1;
        if (left <= 0) open.delete(address);
        else open.set(address, left);
      });
    });
  }
  return { refused: () => refused, open: (address) => open.get(address) ?? 0 };
}
