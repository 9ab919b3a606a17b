// A lint rule: no module reaches itself back through its imports, `import type` included.
//
// import-x/no-cycle skips type-only imports (they vanish at run time), so two modules that
// only share types through each other pass it; but such a pair is still one design split in
// two, and the next value import closes the circle at run time. This rule counts every
// import: `import`, `import type`, `export ... from`, `import x = require()`, `import()` and
// `import('...')` types. Specifiers are resolved by TypeScript with the nearest tsconfig's
// options (so `.js` names the `.ts` source and workspace packages their sources); packages
// under node_modules are left out.
import fs from 'node:fs';
import path from 'node:path';
import ts from 'typescript';

/** @type {Map<string, { mtimeMs: number, imports: { spec: string, pos: number }[] }>} */
const parsed = new Map();
/** @type {Map<string, ts.CompilerOptions>} */
const optionsByConfig = new Map();
/** @type {Map<string, string | undefined>} */
const configByDir = new Map();
/** @type {Map<string, string | null>} */
const resolved = new Map();

/** The module specifiers a file names, with where each stands. */
function importsOf(fileName, text) {
  const source = ts.createSourceFile(fileName, text, ts.ScriptTarget.Latest, false);
  /** @type {{ spec: string, pos: number }[]} */
  const found = [];
  const add = (node) => {
    if (node && ts.isStringLiteralLike(node)) found.push({ spec: node.text, pos: node.getStart(source) });
  };
  const visit = (node) => {
    if (ts.isImportDeclaration(node) || ts.isExportDeclaration(node)) add(node.moduleSpecifier);
    else if (ts.isImportEqualsDeclaration(node) && ts.isExternalModuleReference(node.moduleReference)) add(node.moduleReference.expression);
    else if (ts.isCallExpression(node) && node.expression.kind === ts.SyntaxKind.ImportKeyword) add(node.arguments[0]);
    else if (ts.isImportTypeNode(node) && ts.isLiteralTypeNode(node.argument)) add(node.argument.literal);
    ts.forEachChild(node, visit);
  };
  visit(source);
  return { source, found };
}

function nearestConfig(dir) {
  if (configByDir.has(dir)) return configByDir.get(dir);
  const candidate = path.join(dir, 'tsconfig.json');
  const parent = path.dirname(dir);
  const config = fs.existsSync(candidate) ? candidate : parent === dir ? undefined : nearestConfig(parent);
  configByDir.set(dir, config);
  return config;
}

function compilerOptions(fileName) {
  const config = nearestConfig(path.dirname(fileName));
  if (!config) return {};
  let options = optionsByConfig.get(config);
  if (!options) {
    const read = ts.readConfigFile(config, ts.sys.readFile);
    options = ts.parseJsonConfigFileContent(read.config ?? {}, ts.sys, path.dirname(config)).options;
    optionsByConfig.set(config, options);
  }
  return options;
}

/** The file of this tree that `spec`, imported from `fromFile`, names; null for a package or nothing. */
function resolve(spec, fromFile) {
  const key = `${fromFile}\0${spec}`;
  if (resolved.has(key)) return resolved.get(key);
  const result = ts.resolveModuleName(spec, fromFile, compilerOptions(fromFile), ts.sys, undefined, undefined, ts.ModuleKind.ESNext);
  const module = result.resolvedModule;
  const file = module && !module.isExternalLibraryImport && !module.resolvedFileName.includes(`${path.sep}node_modules${path.sep}`) ? path.resolve(module.resolvedFileName) : null;
  resolved.set(key, file);
  return file;
}

/** The files of this tree that `fileName` imports, read afresh when the file changed. */
function dependencies(fileName, checked) {
  let entry = parsed.get(fileName);
  if (!checked.has(fileName)) {
    checked.add(fileName);
    let mtimeMs;
    try {
      mtimeMs = fs.statSync(fileName).mtimeMs;
    } catch {
      return [];
    }
    if (!entry || entry.mtimeMs !== mtimeMs) {
      entry = { mtimeMs, imports: importsOf(fileName, fs.readFileSync(fileName, 'utf8')).found };
      parsed.set(fileName, entry);
    }
  }
  if (!entry) return [];
  return entry.imports.map(({ spec }) => resolve(spec, fileName)).filter((file) => file !== null);
}

/** The shortest chain of imports from `start` back to `target`, or undefined. */
function pathBack(start, target, checked) {
  const previous = new Map([[start, null]]);
  const queue = [start];
  while (queue.length > 0) {
    const file = queue.shift();
    for (const next of dependencies(file, checked)) {
      if (next === target) {
        const chain = [file];
        for (let at = previous.get(file); at; at = previous.get(at)) chain.unshift(at);
        return chain;
      }
      if (!previous.has(next)) {
        previous.set(next, file);
        queue.push(next);
      }
    }
  }
  return undefined;
}

/** @type {import('eslint').Rule.RuleModule} */
const noImportCycle = {
  meta: {
    type: 'problem',
    docs: { description: 'Forbid an import whose module imports this one back, type-only imports included.' },
    schema: [],
    messages: { cycle: 'Import cycle: {{chain}} (type-only imports count too: move what both sides share into a module of its own).' },
  },
  create(context) {
    const fileName = path.resolve(context.physicalFilename);
    return {
      Program() {
        const root = context.cwd;
        const checked = new Set([fileName]);
        const { source, found } = importsOf(fileName, context.sourceCode.text);
        const reported = new Set();
        for (const { spec, pos } of found) {
          const target = resolve(spec, fileName);
          if (!target || target === fileName || reported.has(target)) continue;
          const chain = pathBack(target, fileName, checked);
          if (!chain) continue;
          reported.add(target);
          const { line, character } = source.getLineAndCharacterOfPosition(pos);
          const names = [fileName, ...chain, fileName].map((file) => path.relative(root, file));
          context.report({
            loc: { start: { line: line + 1, column: character }, end: { line: line + 1, column: character + spec.length + 2 } },
            messageId: 'cycle',
            data: { chain: names.join(' -> ') },
          });
        }
      },
    };
  },
};

export default { rules: { 'no-import-cycle': noImportCycle } };
