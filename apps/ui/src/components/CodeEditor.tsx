/**
 * A CodeMirror 6 editor for JSON or YAML, with diagnostics shown in place (lint marks and
 * gutter). Load it lazily (`React.lazy(() => import('./CodeEditor.tsx'))`): CodeMirror stays
 * out of the initial bundle.
 */
import { useComputedColorScheme } from '@mantine/core';
import { json } from '@codemirror/lang-json';
import { yaml } from '@codemirror/lang-yaml';
import { lintGutter, setDiagnostics, type Diagnostic } from '@codemirror/lint';
import { Compartment, EditorState } from '@codemirror/state';
import { EditorView } from '@codemirror/view';
import { basicSetup } from 'codemirror';
import { useEffect, useEffectEvent, useRef, type ReactNode } from 'react';

/** A problem to mark in the text (character offsets). */
export interface EditorProblem {
  from: number;
  to: number;
  message: string;
  severity?: 'error' | 'warning' | 'info';
}

export interface CodeEditorProps {
  value: string;
  onChange?: (value: string) => void;
  mode: 'json' | 'yaml';
  problems?: readonly EditorProblem[];
  readOnly?: boolean;
  /** Accessible name of the editing area. */
  label: string;
  /** CSS height of the editor, e.g. `60vh`. */
  height?: string;
}

function theme(dark: boolean, height: string) {
  return EditorView.theme(
    {
      '&': {
        height,
        fontSize: '13px',
        border: '1px solid var(--mantine-color-default-border)',
        borderRadius: 'var(--mantine-radius-sm)',
        backgroundColor: 'var(--mantine-color-body)',
        color: 'var(--mantine-color-text)',
      },
      '&.cm-focused': { outline: '2px solid var(--mantine-primary-color-filled)' },
      '.cm-scroller': { fontFamily: 'var(--mantine-font-family-monospace)' },
      '.cm-gutters': { backgroundColor: 'var(--mantine-color-default)', color: 'var(--mantine-color-dimmed)', border: 'none' },
      '.cm-activeLine': { backgroundColor: dark ? '#ffffff0d' : '#0000000a' },
      '.cm-activeLineGutter': { backgroundColor: dark ? '#ffffff14' : '#0000000f' },
      '.cm-cursor': { borderLeftColor: 'var(--mantine-color-text)' },
    },
    { dark },
  );
}

export default function CodeEditor({ value, onChange, mode, problems = [], readOnly = false, label, height = '60vh' }: CodeEditorProps): ReactNode {
  const host = useRef<HTMLDivElement>(null);
  const view = useRef<EditorView | null>(null);
  // The editor's listener calls the latest `onChange` (an effect event: it is called from the editor, set up in the effect below).
  const changed = useEffectEvent((text: string) => onChange?.(text));
  const compartments = useRef({ lang: new Compartment(), theme: new Compartment(), readOnly: new Compartment(), label: new Compartment() });
  const dark = useComputedColorScheme('light') === 'dark';

  useEffect(() => {
    if (!host.current) return;
    const c = compartments.current;
    const editor = new EditorView({
      parent: host.current,
      state: EditorState.create({
        doc: value,
        extensions: [
          basicSetup,
          lintGutter(),
          c.lang.of(mode === 'json' ? json() : yaml()),
          c.theme.of(theme(dark, height)),
          c.readOnly.of([EditorState.readOnly.of(readOnly), EditorView.editable.of(!readOnly)]),
          c.label.of(EditorView.contentAttributes.of({ 'aria-label': label })),
          EditorView.updateListener.of((update) => {
            if (update.docChanged) changed(update.state.doc.toString());
          }),
        ],
      }),
    });
    view.current = editor;
    return () => {
      editor.destroy();
      view.current = null;
    };
    // The editor is made once; the effects below follow the props.
    // eslint-disable-next-line react-hooks/exhaustive-deps
  }, []);

  useEffect(() => {
    const editor = view.current;
    if (!editor) return;
    const current = editor.state.doc.toString();
    if (current !== value) editor.dispatch({ changes: { from: 0, to: current.length, insert: value } });
  }, [value]);

  useEffect(() => {
    view.current?.dispatch({ effects: compartments.current.lang.reconfigure(mode === 'json' ? json() : yaml()) });
  }, [mode]);

  // The name follows the label (it names the format, which can be switched).
  useEffect(() => {
    view.current?.dispatch({ effects: compartments.current.label.reconfigure(EditorView.contentAttributes.of({ 'aria-label': label })) });
  }, [label]);

  useEffect(() => {
    view.current?.dispatch({ effects: compartments.current.theme.reconfigure(theme(dark, height)) });
  }, [dark, height]);

  useEffect(() => {
    view.current?.dispatch({
      effects: compartments.current.readOnly.reconfigure([EditorState.readOnly.of(readOnly), EditorView.editable.of(!readOnly)]),
    });
  }, [readOnly]);

  useEffect(() => {
    const editor = view.current;
    if (!editor) return;
    const length = editor.state.doc.length;
    const diagnostics: Diagnostic[] = problems.map((p) => {
      const from = Math.max(0, Math.min(p.from, length));
      return { from, to: Math.max(from, Math.min(p.to, length)), message: p.message, severity: p.severity ?? 'error' };
    });
    editor.dispatch(setDiagnostics(editor.state, diagnostics));
    const first = diagnostics[0];
    if (first) editor.dispatch({ selection: { anchor: first.from }, effects: EditorView.scrollIntoView(first.from, { y: 'center' }) });
  }, [problems]);

  return <div ref={host} data-testid="code-editor" />;
}
