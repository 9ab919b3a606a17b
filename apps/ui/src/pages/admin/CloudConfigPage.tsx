import { Alert, Button, Code, CopyButton, Group, NumberInput, PasswordInput, Select, Stack, Switch, Text, Textarea, TextInput, Title } from '@mantine/core';
import { useState, type FormEvent } from 'react';
import { ErrorNotice } from '../../api/errors.ts';
import { useRunners } from '../../api/queries.ts';
import { useSession } from '../../api/session.tsx';
import { downloadText } from '../../components/download.ts';

/** The shortest discovery token the control plane accepts (as the CLI checks). */
const MIN_TOKEN_LENGTH = 16;

/**
 * The cloud-init user-data with which new servers register themselves, generated in the
 * browser by `@carapace/cloud-init` (the same generator as `carapace cloud-config`; loaded on
 * demand). The runner's SSH public key comes from `GET /v1/runner/`.
 */
export function CloudConfigPage() {
  const { can } = useSession();
  const runners = useRunners({ enabled: can('view_runner') });
  const withKeys = (runners.data?.items ?? []).filter((r) => r.ssh_public_key);
  const [url, setUrl] = useState(() => window.location.origin);
  const [token, setToken] = useState('');
  const [runner, setRunner] = useState<string | null>(null);
  const [publicKey, setPublicKey] = useState('');
  const [username, setUsername] = useState('ansible');
  const [timeout, setTimeoutSeconds] = useState<number | string>(20);
  const [discovery, setDiscovery] = useState(true);
  const [output, setOutput] = useState<string | null>(null);
  const [error, setError] = useState<unknown>(null);
  const [busy, setBusy] = useState(false);

  const chooseRunner = (name: string | null) => {
    setRunner(name);
    const key = withKeys.find((r) => r.name === name)?.ssh_public_key;
    if (key) setPublicKey(key.trim());
  };

  const generate = async (event: FormEvent) => {
    event.preventDefault();
    setError(null);
    setOutput(null);
    if (discovery && token.length < MIN_TOKEN_LENGTH) {
      setError(new Error(`The discovery token is ${token.length} characters long: the service accepts only tokens of at least ${MIN_TOKEN_LENGTH} (its discoveryTokens setting).`));
      return;
    }
    setBusy(true);
    try {
      const { generateCloudConfig } = await import('@carapace/cloud-init');
      const text = generateCloudConfig({
        url: url.trim(),
        serverDiscoveryToken: token,
        publicKey: publicKey.trim(),
        username: username.trim(),
        timeout: typeof timeout === 'number' ? Math.max(1, Math.ceil(timeout)) : 20,
        noDiscovery: !discovery,
      });
      setOutput(text.endsWith('\n') ? text : `${text}\n`);
    } catch (err) {
      setError(err);
    } finally {
      setBusy(false);
    }
  };

  return (
    <Stack gap="md" maw={960}>
      <Title order={2}>Cloud-config generator</Title>
      <Text size="sm" c="dimmed">
        The cloud-init user-data of a new server: it creates the automation user with the runner's SSH key and registers the server with the control plane at every boot
        (what <Code>carapace cloud-config</Code> prints).
      </Text>
      <form onSubmit={(e) => void generate(e)} aria-label="Cloud-config generator">
        <Stack>
          <TextInput label="Control plane URL" description="The address the new servers reach the service at" required value={url} onChange={(e) => setUrl(e.currentTarget.value)} />
          <PasswordInput
            label="Discovery token"
            description="One of the control plane's discovery tokens (CARAPACE_DISCOVERY_TOKEN)"
            required={discovery}
            value={token}
            onChange={(e) => setToken(e.currentTarget.value)}
          />
          {can('view_runner') ? (
            <Select
              label="Runner"
              description="Fills in the SSH public key of a runner that has connected"
              placeholder={runners.isLoading ? 'Loading…' : withKeys.length ? 'Choose a runner' : 'No runner has reported a key yet'}
              data={withKeys.map((r) => ({ value: r.name, label: `${r.name} (${r.state})` }))}
              value={runner}
              onChange={chooseRunner}
              clearable
            />
          ) : null}
          <ErrorNotice error={runners.error} />
          <Textarea label="SSH public key" required autosize minRows={2} value={publicKey} onChange={(e) => setPublicKey(e.currentTarget.value)} placeholder="ssh-ed25519 AAAA… runner@carapace" />
          <Group grow align="start">
            <TextInput label="Username" required value={username} onChange={(e) => setUsername(e.currentTarget.value)} />
            <NumberInput label="Request timeout (seconds)" min={1} value={timeout} onChange={setTimeoutSeconds} />
          </Group>
          <Switch label="Register with the service (discovery)" checked={discovery} onChange={(e) => setDiscovery(e.currentTarget.checked)} />
          {error ? (
            <Alert color="red" title="Cannot generate" role="alert">
              {error instanceof Error ? error.message : 'the user-data could not be generated'}
            </Alert>
          ) : null}
          <Group>
            <Button type="submit" loading={busy}>
              Generate user-data
            </Button>
          </Group>
        </Stack>
      </form>
      {output ? (
        <Stack gap="xs">
          <Group justify="space-between">
            <Title order={3}>User-data</Title>
            <Group gap="xs">
              <CopyButton value={output}>
                {({ copied, copy }) => (
                  <Button size="xs" color={copied ? 'teal' : undefined} onClick={copy}>
                    {copied ? 'Copied' : 'Copy user-data'}
                  </Button>
                )}
              </CopyButton>
              <Button size="xs" variant="default" onClick={() => downloadText('user-data', output)}>
                Download user-data
              </Button>
            </Group>
          </Group>
          <Code block aria-label="User-data" style={{ maxHeight: '50vh', overflow: 'auto' }}>
            {output}
          </Code>
        </Stack>
      ) : null}
    </Stack>
  );
}
