// Password strength as the identity SDK reads it (POST /identity/v1/password/strength:
// {score: 0..4}), estimated by zxcvbn-ts with its common-password and name dictionaries
// (loaded on first use: a payd whose users never ask does not hold them). The same
// estimate is part of the one password rule (src/identity/idp/password-policy.ts).
type Estimate = (password: string) => { score: 0 | 1 | 2 | 3 | 4 };

/** Only the first characters count (the policy's longest password): the estimate grows with the length. */
const ESTIMATED_CHARS = 256;

let estimator: Promise<Estimate> | undefined;

const cjsExports = <T extends object>(m: T): T => ((m as { default?: T }).default ?? m);

function load(): Promise<Estimate> {
  estimator ??= Promise.all([import('@zxcvbn-ts/core'), import('@zxcvbn-ts/language-common')]).then(([coreModule, commonModule]) => {
    // Both are CommonJS: Node's import() offers their exports by name, the server bundle
    // (esbuild, a chunk loaded on use) only as the default export.
    const core = cjsExports(coreModule);
    const common = cjsExports(commonModule);
    const factory = new core.ZxcvbnFactory({
      dictionary: { ...common.dictionary },
      graphs: common.adjacencyGraphs,
    });
    return (password: string) => factory.check(password) as { score: 0 | 1 | 2 | 3 | 4 };
  });
  return estimator;
}

/** 0 (guessed at once) to 4 (very unlikely to be guessed); only the first 256 characters count. */
export async function passwordScore(password: string): Promise<0 | 1 | 2 | 3 | 4> {
  return (await load())(password.slice(0, ESTIMATED_CHARS)).score;
}
