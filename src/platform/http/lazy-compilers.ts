// Fastify compiles every route's validators (Ajv) and response serializers
// (fast-json-stringify) when the app gets ready: a few seconds of CPU for payd's routes,
// most of the start-up once the database is open. These factories wrap Fastify's own
// (the same packages, resolved through Fastify, same options) so that each schema
// compiles on the first request that needs it instead: a start costs only the routes'
// registration, and a route nobody calls costs nothing. The compiled function is then
// called directly; the wrapper adds one property read per call.
//
// A schema that cannot compile would now fail its first request rather than the start;
// compileAllSchemas() compiles every pending one (test/platform/startup-build.test.ts
// calls it on the whole app, so such a schema still fails CI).
import AjvCompiler from '@fastify/ajv-compiler';
import SerializerCompiler from '@fastify/fast-json-stringify-compiler';

type Fn = ((...args: unknown[]) => unknown) & { errors?: unknown; schemaEnv?: unknown };
type Compile = (routeSchema: unknown) => Fn;
type Factory = (externalSchemas: unknown, options: unknown) => Compile;

// Direct dependencies at fastify's own version ranges (npm installs one copy for both).
const ValidatorSelector = AjvCompiler as unknown as () => Factory;
const SerializerSelector = SerializerCompiler as unknown as () => Factory;

const pending = new Set<() => unknown>();

/** Compiles every schema not compiled yet (tests: no schema may fail on first use). */
export function compileAllSchemas(): void {
  for (const compile of [...pending]) compile();
}

function lazily(factory: Factory, kind: 'validator' | 'serializer'): Factory {
  return (externalSchemas, options) => {
    const compile = factory(externalSchemas, options);
    return (routeSchema) => {
      let fn: Fn | undefined;
      const get = (): Fn => {
        if (!fn) {
          fn = compile(routeSchema);
          pending.delete(get);
        }
        return fn;
      };
      pending.add(get);
      if (kind === 'serializer') return ((data: unknown) => get()(data)) as Fn;
      // Fastify passes Ajv's data context (to let Ajv coerce a root value) when the
      // function has schemaEnv, and reads .errors after a failed validation.
      const validate: Fn = (data: unknown, context?: unknown) => {
        const f = get();
        const result = f(data, context);
        validate.errors = f.errors;
        return result;
      };
      validate.schemaEnv = true;
      return validate;
    };
  };
}

/** Fastify's schemaController option. */
export function lazySchemaController() {
  return {
    compilersFactory: {
      buildValidator: lazily(ValidatorSelector(), 'validator'),
      buildSerializer: lazily(SerializerSelector(), 'serializer'),
    },
  };
}
