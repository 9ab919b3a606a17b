/**
 * A side-by-side diff of two texts (@codemirror/merge), read-only. Load it lazily.
 */
import { useComputedColorScheme } from '@mantine/core';
import { json } from '@codemirror/lang-json';
import { yaml } from '@codemirror/lang-yaml';
import { MergeView } from '@codemirror/merge';
import { EditorState } from '@codemirror/state';
import { EditorView, lineNumbers } from '@codemirror/view';
import { useEffect, useRef, type ReactNode } from 'react';

export interface DiffViewProps {
  /** The older text (left). */
  a: string;
  /** The newer text (right). */
  b: string;
  mode: 'json' | 'yaml';
  /** Accessible names of the two sides. */
  labelA: string;
  labelB: string;
}

export default function DiffView({ a, b, mode, labelA, labelB }: DiffViewProps): ReactNode {
  const host = useRef<HTMLDivElement>(null);
  const dark = useComputedColorScheme('light') === 'dark';

  useEffect(() => {
    if (!host.current) return;
    const common = (label: string) => [
      lineNumbers(),
      mode === 'json' ? json() : yaml(),
      EditorState.readOnly.of(true),
      EditorView.editable.of(false),
      EditorView.contentAttributes.of({ 'aria-label': label }),
      EditorView.theme(
        {
          '&': { fontSize: '13px', backgroundColor: 'var(--mantine-color-body)', color: 'var(--mantine-color-text)' },
          '.cm-scroller': { fontFamily: 'var(--mantine-font-family-monospace)' },
          '.cm-gutters': { backgroundColor: 'var(--mantine-color-default)', color: 'var(--mantine-color-dimmed)', border: 'none' },
        },
        { dark },
      ),
    ];
    const view = new MergeView({
      a: { doc: a, extensions: common(labelA) },
      b: { doc: b, extensions: common(labelB) },
      parent: host.current,
      collapseUnchanged: { margin: 3, minSize: 6 },
      gutter: true,
    });
    return () => view.destroy();
  }, [a, b, mode, labelA, labelB, dark]);

  return (
    <div
      ref={host}
      data-testid="diff-view"
      style={{ border: '1px solid var(--mantine-color-default-border)', borderRadius: 'var(--mantine-radius-sm)', maxHeight: '70vh', overflow: 'auto' }}
    />
  );
}
