import type { Command, Option } from 'commander';

/** The shells `carapace completion` writes a script for. */
export const SHELLS = ['bash', 'zsh', 'fish'] as const;
export type Shell = (typeof SHELLS)[number];

/** An option as completion sees it. */
interface OptionSpec {
  /** `-o`, `--output`. */
  readonly flags: string[];
  readonly description: string;
  /** Whether a value follows the option. */
  readonly takesValue: boolean;
  /** The values it takes, when they are a known few. */
  readonly choices: readonly string[];
  /** Whether its value is a path (its value is named `<file>` or `<dir>`). */
  readonly path: boolean;
}

/** A command of the tree: its words from the top, subcommands, options, what its arguments take. */
interface Node {
  /** `'cluster get-all'`; `''` for the program. */
  readonly path: string;
  readonly name: string;
  readonly description: string;
  readonly children: Node[];
  /** Its own options (the program's are everyone's). */
  readonly options: OptionSpec[];
  /** The choices of its arguments, e.g. `bash zsh fish`. */
  readonly choices: string[];
  /** Whether an argument is a file. */
  readonly files: boolean;
}

const HELP: OptionSpec = { flags: ['-h', '--help'], description: 'display help', takesValue: false, choices: [], path: false };

function optionSpec(option: Option): OptionSpec {
  return {
    flags: [option.short, option.long].filter((f): f is string => typeof f === 'string'),
    description: option.description,
    takesValue: option.required || option.optional,
    choices: option.argChoices ?? [],
    path: /<[^>]*(file|dir)[^>]*>/i.test(option.flags),
  };
}

function firstLine(text: string): string {
  return (text.split('\n')[0] ?? '').trim();
}

function node(command: Command, parent: string): Node {
  const path = parent === '' && command.parent === null ? '' : parent ? `${parent} ${command.name()}` : command.name();
  const args = command.registeredArguments;
  return {
    path,
    name: command.name(),
    description: firstLine(command.summary() || command.description()),
    children: command.commands.map((c) => node(c, path)),
    options: [...command.options.filter((o) => !o.hidden).map(optionSpec), HELP],
    choices: args.flatMap((a) => a.argChoices ?? []),
    files: args.some((a) => /file/i.test(a.name())),
  };
}

function walk(root: Node): Node[] {
  return [root, ...root.children.flatMap(walk)];
}

/** Quotes for bash, zsh and fish alike: single quotes, a quote inside as `'\''`. */
function quote(text: string): string {
  return `'${text.replace(/'/g, `'\\''`)}'`;
}

interface Tree {
  readonly root: Node;
  readonly nodes: Node[];
  /** The paths of every command but the program. */
  readonly paths: string[];
  /** Every option of the tree, merged by flag. */
  readonly options: OptionSpec[];
  /** The program's options: valid after any command. */
  readonly globals: OptionSpec[];
}

function tree(program: Command): Tree {
  const root = node(program, '');
  const nodes = walk(root);
  const byFlag = new Map<string, OptionSpec>();
  for (const option of nodes.flatMap((n) => n.options)) {
    const key = option.flags.join(' ');
    const known = byFlag.get(key);
    byFlag.set(key, known ? { ...known, choices: [...new Set([...known.choices, ...option.choices])], path: known.path || option.path } : option);
  }
  return { root, nodes, paths: nodes.filter((n) => n.path !== '').map((n) => n.path), options: [...byFlag.values()], globals: root.options.filter((o) => o !== HELP && !o.flags.includes('--version')) };
}

/** The words that may follow a command: subcommands, argument choices, options. */
function candidates(t: Tree, n: Node): string[] {
  const options = n === t.root ? n.options : [...n.options, ...t.globals];
  const help = n === t.root ? ['help'] : [];
  return [...n.children.map((c) => c.name), ...help, ...n.choices, ...options.flatMap((o) => o.flags)];
}

function bash(t: Tree, program: string): string {
  const choiceCases = t.options
    .filter((o) => o.choices.length > 0)
    .map((o) => `    ${o.flags.join('|')}) COMPREPLY=($(compgen -W ${quote(o.choices.join(' '))} -- "$cur")); return ;;`);
  const valueFlags = [...new Set(t.options.filter((o) => o.takesValue && o.choices.length === 0).flatMap((o) => o.flags))];
  const wordCases = t.nodes.map((n) => `    ${quote(n.path)}) words=${quote(candidates(t, n).join(' '))} ;;`);
  return `# bash completion of ${program}, made from its commands by "${program} completion bash".
# Load it with: source <(${program} completion bash)
# or install it: ${program} completion bash > ~/.local/share/bash-completion/completions/${program}
_${program}() {
  local cur="\${COMP_WORDS[COMP_CWORD]}" prev="\${COMP_WORDS[COMP_CWORD-1]}"
  local cmd="" next w i words=""
  for ((i = 1; i < COMP_CWORD; i++)); do
    w="\${COMP_WORDS[i]}"
    case "$w" in -*) continue ;; esac
    next="\${cmd:+$cmd }$w"
    case "$next" in
      ${t.paths.map(quote).join('|')}) cmd="$next" ;;
    esac
  done
  case "$prev" in
${choiceCases.join('\n')}
    ${valueFlags.join('|') || '--'}) return ;;
  esac
  case "$cmd" in
${wordCases.join('\n')}
  esac
  COMPREPLY=($(compgen -W "$words" -- "$cur"))
}
complete -o default -o bashdefault -F _${program} ${program}
`;
}

/** A `name:description` item of zsh's `_describe`. */
function described(name: string, description: string): string {
  return quote(`${name.replace(/:/g, '\\:')}:${description.replace(/:/g, '\\:')}`);
}

function zsh(t: Tree, program: string): string {
  const choiceCases = t.options.filter((o) => o.choices.length > 0).map((o) => `    (${o.flags.join('|')}) compadd -- ${o.choices.map(quote).join(' ')}; return ;;`);
  const pathFlags = [...new Set(t.options.filter((o) => o.takesValue && o.choices.length === 0 && o.path).flatMap((o) => o.flags))];
  const valueFlags = [...new Set(t.options.filter((o) => o.takesValue && o.choices.length === 0 && !o.path).flatMap((o) => o.flags))].filter((f) => !pathFlags.includes(f));
  const describedOptions = (options: readonly OptionSpec[]) => options.flatMap((o) => o.flags.map((f) => described(f, o.description))).join(' ');
  const nodeCases = t.nodes.map((n) => {
    const commands = [...n.children.map((c) => described(c.name, c.description)), ...(n === t.root ? [described('help', 'display help for a command')] : [])];
    const lines = [
      `      cmds=(${commands.join(' ')})`,
      n === t.root ? `      opts=(${describedOptions(n.options)})` : `      opts=(${describedOptions(n.options)} "\${globals[@]}")`,
      `      argchoices=(${n.choices.map(quote).join(' ')})`,
      `      files=${n.files ? 1 : 0}`,
    ];
    return `    (${quote(n.path)})\n${lines.join('\n')}\n      ;;`;
  });
  return `#compdef ${program}
# zsh completion of ${program}, made from its commands by "${program} completion zsh".
# Load it with: source <(${program} completion zsh)
# or install it as _${program} in a directory of $fpath.
_${program}() {
  local cmd="" next w i files=0
  local -a cmds opts argchoices globals
  # The program's options, valid after any command.
  globals=(${describedOptions(t.globals)})
  for ((i = 2; i < CURRENT; i++)); do
    w=\${words[i]}
    [[ $w == -* ]] && continue
    next="\${cmd:+$cmd }$w"
    case "$next" in
      (${t.paths.map(quote).join('|')}) cmd="$next" ;;
    esac
  done
  case "\${words[CURRENT-1]}" in
${choiceCases.join('\n')}
    (${pathFlags.join('|') || '--'}) _files; return ;;
    (${valueFlags.join('|') || '--'}) return ;;
  esac
  case "$cmd" in
${nodeCases.join('\n')}
  esac
  _describe -t commands 'command' cmds
  (( \${#argchoices} )) && compadd -- "\${argchoices[@]}"
  _describe -t options 'option' opts
  (( files )) && _files
  return 0
}
if [ "$funcstack[1]" = "_${program}" ]; then
  _${program} "$@"
else
  compdef _${program} ${program}
fi
`;
}

/** Quotes for fish: inside single quotes, a backslash escapes a quote and a backslash. */
function fishQuote(text: string): string {
  return `'${text.replace(/[\\']/g, '\\$&')}'`;
}

function fish(t: Tree, program: string): string {
  const quote = fishQuote;
  const at = (n: Node) => `-n ${quote(`__${program}_at ${quote(n.path)}`)}`;
  const optionLine = (o: OptionSpec, condition: string) => {
    const flags = o.flags.map((f) => (f.startsWith('--') ? `-l ${f.slice(2)}` : `-s ${f.slice(1)}`)).join(' ');
    const value = o.choices.length > 0 ? `-x -a ${quote(o.choices.join(' '))}` : o.path ? '-r -F' : o.takesValue ? '-x' : '';
    return `complete -c ${program} ${condition}${flags} ${value} -d ${quote(o.description)}`.replace(/ {2,}/g, ' ');
  };
  const lines: string[] = [];
  for (const n of t.nodes) {
    for (const c of n.children) lines.push(`complete -c ${program} ${at(n)} -a ${quote(c.name)} -d ${quote(c.description)}`);
    if (n.choices.length > 0) lines.push(`complete -c ${program} ${at(n)} -a ${quote(n.choices.join(' '))}`);
    if (n.files) lines.push(`complete -c ${program} ${at(n)} -F`);
    if (n !== t.root) for (const o of n.options) if (o !== HELP) lines.push(optionLine(o, `${at(n)} `));
  }
  for (const o of [...t.root.options]) lines.push(optionLine(o, ''));
  return `# fish completion of ${program}, made from its commands by "${program} completion fish".
# Install it: ${program} completion fish > ~/.config/fish/completions/${program}.fish
function __${program}_path
    set -l words (commandline -opc)
    set -e words[1]
    set -l cmd ''
    for w in $words
        string match -q -- '-*' $w; and continue
        set -l next (string trim -- "$cmd $w")
        if contains -- $next ${t.paths.map(quote).join(' ')}
            set cmd $next
        end
    end
    echo $cmd
end
function __${program}_at
    set -l cmd (__${program}_path)
    test "$cmd" = "$argv[1]"
end
complete -c ${program} -f
complete -c ${program} -n ${quote(`__${program}_at ''`)} -a help -d 'display help for a command'
${lines.join('\n')}
`;
}

/**
 * The completion script of `program` for `shell`, made from its command tree: command
 * groups, their commands, options (those of the program after any command), the choices of
 * options and arguments, and file names where a file is expected.
 */
export function completionScript(program: Command, shell: Shell): string {
  const t = tree(program);
  const name = program.name();
  switch (shell) {
    case 'bash':
      return bash(t, name);
    case 'zsh':
      return zsh(t, name);
    case 'fish':
      return fish(t, name);
  }
}
