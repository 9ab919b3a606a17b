import { NumberInput, Select, Stack, Switch, Text, TextInput } from '@mantine/core';
import type { ReactNode } from 'react';
import type { HintField, HintFormValue } from './hintForm.ts';

/** The hints of a playbook as form fields (see {@link hintFields}). */
export function HintFields({
  fields,
  values,
  onChange,
}: {
  fields: readonly HintField[];
  values: Record<string, HintFormValue>;
  onChange: (id: string, value: HintFormValue) => void;
}): ReactNode {
  if (!fields.length) return <Text size="sm" c="dimmed">This playbook takes no hints.</Text>;
  return (
    <Stack gap="sm">
      {fields.map((field) => {
        const value = values[field.id];
        switch (field.kind) {
          case 'boolean':
            return (
              <Switch
                key={field.id}
                label={field.label}
                description={field.description}
                checked={value === true}
                onChange={(e) => onChange(field.id, e.currentTarget.checked)}
              />
            );
          case 'integer':
          case 'number':
            return (
              <NumberInput
                key={field.id}
                label={field.label}
                description={field.description}
                allowDecimal={field.kind === 'number'}
                value={typeof value === 'number' || typeof value === 'string' ? value : ''}
                onChange={(v) => onChange(field.id, v)}
                maw={240}
              />
            );
          case 'select':
            return (
              <Select
                key={field.id}
                label={field.label}
                description={field.description}
                data={field.options}
                value={typeof value === 'string' && value !== '' ? value : null}
                onChange={(v) => onChange(field.id, v ?? '')}
                clearable
                maw={320}
              />
            );
          default:
            return (
              <TextInput
                key={field.id}
                label={field.label}
                description={field.description}
                value={typeof value === 'string' ? value : String(value ?? '')}
                onChange={(e) => onChange(field.id, e.currentTarget.value)}
                maw={480}
              />
            );
        }
      })}
    </Stack>
  );
}
