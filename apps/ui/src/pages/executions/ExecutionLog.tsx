import { Alert, Button, Text } from '@mantine/core';
import { notifications } from '@mantine/notifications';
import { useEffect, useEffectEvent, useState, type ReactNode } from 'react';
import { errorMessage } from '../../api/errors.ts';
import { useClient } from '../../api/session.tsx';
import { LogBuffer } from '../../components/logBuffer.ts';
import { LogView } from '../../components/LogView.tsx';
import { downloadText } from '../../components/download.ts';

/** How often (ms) the view is told that the log grew while text streams in. */
const FLUSH_MS = 100;

/**
 * The log of an execution, followed live (`GET /v1/execution/{id}/log/?follow=yes`) until
 * the execution is over; the stream is closed when the page goes away. Reconnecting after a
 * broken stream follows it afresh (a new mount).
 */
export function ExecutionLog({ executionId, onEnded }: { executionId: string; onEnded?: () => void }): ReactNode {
  const [attempt, setAttempt] = useState(0);
  return <FollowedLog key={`${executionId} ${attempt}`} executionId={executionId} onEnded={onEnded} onReconnect={() => setAttempt((a) => a + 1)} />;
}

function FollowedLog({ executionId, onEnded, onReconnect }: { executionId: string; onEnded?: () => void; onReconnect: () => void }): ReactNode {
  const client = useClient();
  const [buffer] = useState(() => new LogBuffer());
  const [version, setVersion] = useState(0);
  const [following, setFollowing] = useState(true);
  const [error, setError] = useState<unknown>(null);
  const [downloading, setDownloading] = useState(false);
  const ended = useEffectEvent(() => onEnded?.());

  useEffect(() => {
    const controller = new AbortController();
    let timer: ReturnType<typeof setTimeout> | null = null;
    const flush = () => {
      timer = null;
      setVersion((v) => v + 1);
    };
    // From the start (again, when the client changed: another session).
    if (buffer.lineCount > 0) {
      buffer.clear();
      timer = setTimeout(flush, 0);
    }
    void (async () => {
      try {
        for await (const text of client.followExecutionLog(executionId, { signal: controller.signal })) {
          buffer.append(text);
          timer ??= setTimeout(flush, FLUSH_MS);
        }
        if (controller.signal.aborted) return;
        if (timer) clearTimeout(timer);
        flush();
        setFollowing(false);
        ended();
      } catch (err) {
        if (controller.signal.aborted) return;
        if (timer) clearTimeout(timer);
        flush();
        setFollowing(false);
        setError(err);
      }
    })();
    return () => {
      controller.abort();
      if (timer) clearTimeout(timer);
    };
  }, [client, executionId, buffer]);

  const download = async () => {
    setDownloading(true);
    try {
      const text = await client.getExecutionLog(executionId);
      downloadText(`${executionId}.log`, text);
    } catch (err) {
      // The API could not give it: save what the page has.
      notifications.show({ color: 'yellow', title: 'Saved the log as shown', message: errorMessage(err) });
      downloadText(`${executionId}.log`, buffer.text());
    } finally {
      setDownloading(false);
    }
  };

  return (
    <>
      {error ? (
        <Alert color="red" title="The log stream stopped" role="alert" mb="sm">
          <Text size="sm">{errorMessage(error)}</Text>
          <Button size="xs" variant="light" mt="xs" onClick={onReconnect}>
            Reconnect
          </Button>
        </Alert>
      ) : null}
      <LogView
        buffer={buffer}
        version={version}
        following={following}
        label="Execution log"
        actions={
          <Button size="xs" variant="default" onClick={() => void download()} loading={downloading}>
            Download log
          </Button>
        }
      />
    </>
  );
}
