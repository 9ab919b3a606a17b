import { Card, Group, Title } from '@mantine/core';
import type { ReactNode } from 'react';

/** A bordered card that is a titled section (an `h3`, labelled by its title), with an action at the right of the title. */
export function SectionCard({ title, id, children, action, titleSize }: { title: string; id: string; children: ReactNode; action?: ReactNode; titleSize: 'h4' | 'h5' }) {
  return (
    <Card withBorder padding="md" component="section" aria-labelledby={id}>
      <Group justify="space-between" mb="sm">
        <Title order={3} size={titleSize} id={id}>
          {title}
        </Title>
        {action}
      </Group>
      {children}
    </Card>
  );
}
