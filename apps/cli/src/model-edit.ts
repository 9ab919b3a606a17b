import { spawn } from 'node:child_process';
import { mkdtemp, readFile, rm, writeFile } from 'node:fs/promises';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import type { Command } from 'commander';
import { UsageError, type Cli } from './context.js';

/** A model as the update commands handle it. */
interface Model {
  id: string;
  data: object;
}

interface ModelOptions {
  model?: string;
  modelStdin?: boolean;
  modelEditor?: boolean;
}

/** Adds `--model`, `--model-stdin` and `--model-editor` to an update command. */
export function withModelOptions(command: Command): Command {
  return command
    .option('--model <json>', 'the full updated model as JSON ("-" reads it from stdin); the field options are then ignored')
    .option('--model-stdin', 'read the full updated model as JSON from stdin')
    .option('--model-editor', 'edit the data of the current model in $VISUAL or $EDITOR');
}

function parseModel(text: string, id: string): Model {
  let parsed: unknown;
  try {
    parsed = JSON.parse(text);
  } catch {
    throw new UsageError('the model is not valid JSON');
  }
  if (typeof parsed !== 'object' || parsed === null || Array.isArray(parsed) || typeof (parsed as Model).data !== 'object') {
    throw new UsageError('the model must be a JSON object with "id" and "data", as the get command prints it');
  }
  const model = parsed as Model;
  if (model.id !== id) throw new UsageError(`the model's id ${String(model.id)} is not ${id}`);
  return model;
}

async function runEditor(cli: Cli, file: string): Promise<void> {
  const editor = cli.io.env.VISUAL || cli.io.env.EDITOR || 'vi';
  // Through the shell, as git does, so that EDITOR may carry arguments ("code --wait").
  const child = spawn('/bin/sh', ['-c', `${editor} "$1"`, 'editor', file], { stdio: 'inherit', env: { ...cli.io.env } });
  const code = await new Promise<number | null>((resolve, reject) => {
    child.on('error', reject);
    child.on('exit', resolve);
  });
  if (code !== 0) throw new UsageError(`the editor (${editor}) exited with status ${String(code)}: nothing updated`);
}

async function editData<M extends Model>(cli: Cli, model: M): Promise<M | null> {
  const dir = await mkdtemp(join(tmpdir(), 'carapace-edit-'));
  const file = join(dir, `${model.id}.json`);
  try {
    const before = `${JSON.stringify(model.data, null, 2)}\n`;
    await writeFile(file, before, { mode: 0o600 });
    await runEditor(cli, file);
    const after = await readFile(file, 'utf8');
    if (after.trim() === before.trim()) return null;
    let data: unknown;
    try {
      data = JSON.parse(after);
    } catch {
      throw new UsageError('the edited data is not valid JSON: nothing updated');
    }
    if (typeof data !== 'object' || data === null || Array.isArray(data)) throw new UsageError('the edited data must be a JSON object: nothing updated');
    return { ...model, data };
  } finally {
    await rm(dir, { recursive: true, force: true });
  }
}

/**
 * The model an update command sends: the one given with `--model` or on stdin, the current
 * one edited in the editor, or the current one changed by the command's field options
 * (`apply` changes it and says whether any was given). Null when there is nothing to send
 * (the editor left the data as it was).
 */
export async function updatedModel<M extends Model>(cli: Cli, command: Command, id: string, current: () => Promise<M>, apply: (model: M) => boolean): Promise<M | null> {
  const options = command.opts<ModelOptions>();
  const given = [options.model !== undefined, options.modelStdin === true, options.modelEditor === true].filter(Boolean).length;
  if (given > 1) throw new UsageError('give only one of --model, --model-stdin and --model-editor');
  if (options.modelStdin || options.model === '-') return parseModel(await cli.readStdin(), id) as M;
  if (options.model !== undefined) return parseModel(options.model, id) as M;
  const model = await current();
  if (options.modelEditor) {
    const edited = await editData(cli, model);
    if (!edited) cli.note('The data was not changed: nothing updated.');
    return edited;
  }
  if (!apply(model)) throw new UsageError('nothing to update: give the fields to change, or --model, --model-stdin or --model-editor');
  return model;
}
