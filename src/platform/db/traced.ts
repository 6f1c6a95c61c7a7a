// The Db port with spans (tracing on only: app.ts wraps the database with it when it has a
// tracer). A transaction is one span (db.transaction) and each statement one span
// (db.query), inside it or alone. Statements run outside any span (the dispatcher's and
// the recovery worker's polls, the rate-limit counters' sync) are not recorded: a trace
// per poll would bury the ones that matter. The statement's text is recorded as written
// (payd's statements take their values as $n parameters, which are never recorded).
import { context } from '@opentelemetry/api';
import { ATTR, failed, inActiveSpan, type Span, SpanKind, type Tracer } from '../observability/tracing.ts';
import type { Db, Queryable, QueryResult } from './db.ts';

/** The longest statement text kept on a span. */
const MAX_TEXT = 2000;

/** The statement's first keyword (SELECT, INSERT, WITH, ...): its db.operation.name. */
function operation(sql: string): string {
  const m = /^\s*([A-Za-z]+)/.exec(sql);
  return m ? m[1]!.toUpperCase() : 'QUERY';
}

function statementSpan(tracer: Tracer, system: string, sql: string): Span {
  return tracer.startSpan('db.query', {
    kind: SpanKind.CLIENT,
    attributes: {
      [ATTR.dbSystem]: system,
      [ATTR.dbOperation]: operation(sql),
      [ATTR.dbQueryText]: sql.length > MAX_TEXT ? sql.slice(0, MAX_TEXT) : sql,
    },
  });
}

function ended(span: Span, err?: unknown): void {
  if (err !== undefined) {
    failed(span, err);
    const code = (err as { code?: unknown }).code ?? (err as { cause?: { code?: unknown } }).cause?.code;
    if (typeof code === 'string') span.setAttribute(ATTR.dbStatus, code);
  }
  span.end();
}

/** q's statements, each in a span (when a span is active). */
function tracedQueryable(q: Queryable, tracer: Tracer, system: string, counter?: { n: number }): Queryable {
  return {
    async query<T>(sql: string, params?: readonly unknown[]): Promise<QueryResult<T>> {
      if (!inActiveSpan()) return q.query<T>(sql, params);
      if (counter) counter.n++;
      const span = statementSpan(tracer, system, sql);
      try {
        const res = await q.query<T>(sql, params);
        span.end();
        return res;
      } catch (err) {
        ended(span, err);
        throw err;
      }
    },
    exec: (sql) => q.exec(sql),
  };
}

/** db with spans for its transactions and statements; everything else as db does it. */
export function tracedDb(db: Db, tracer: Tracer): Db {
  const system = 'postgresql';
  const root = tracedQueryable(db, tracer, system);
  const traced: Db = Object.create(db) as Db;
  Object.assign(traced, {
    query: root.query,
    transaction<T>(fn: (tx: Queryable) => Promise<T>): Promise<T> {
      if (!inActiveSpan()) return db.transaction(fn);
      return tracer.startActiveSpan('db.transaction', { kind: SpanKind.INTERNAL, attributes: { [ATTR.dbSystem]: system } }, async (span) => {
        const counter = { n: 0 };
        // The transaction's statements are its span's children whoever runs the callback
        // (an adapter may run it from its own queue).
        const ctx = context.active();
        try {
          const result = await db.transaction((tx) => context.with(ctx, () => fn(tracedQueryable(tx, tracer, system, counter))));
          span.setAttribute('payd.db.statements', counter.n);
          span.end();
          return result;
        } catch (err) {
          span.setAttribute('payd.db.statements', counter.n);
          ended(span, err);
          throw err;
        }
      });
    },
  });
  return traced;
}
