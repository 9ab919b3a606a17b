import { Alert, Button, Text } from '@mantine/core';
import { notifications } from '@mantine/notifications';
import { useEffect, useRef, useState, type ReactNode } from 'react';
import { errorMessage } from '../../api/errors.ts';
import { useClient } from '../../api/session.tsx';
import { LogBuffer } from '../../components/logBuffer.ts';
import { LogView } from '../../components/LogView.tsx';
import { downloadText } from '../../components/download.ts';

/** How often (ms) the view is told that the log grew while text streams in. */
const FLUSH_MS = 100;

/**
 * The log of an execution, followed live (`GET /v1/execution/{id}/log/?follow=yes`) until
 * the execution is over; the stream is closed when the page goes away.
 */
export function ExecutionLog({ executionId, onEnded }: { executionId: string; onEnded?: () => void }): ReactNode {
  const client = useClient();
  const buffer = useRef(new LogBuffer());
  const [version, setVersion] = useState(0);
  const [following, setFollowing] = useState(true);
  const [error, setError] = useState<unknown>(null);
  const [attempt, setAttempt] = useState(0);
  const [downloading, setDownloading] = useState(false);
  const onEndedRef = useRef(onEnded);
  onEndedRef.current = onEnded;

  useEffect(() => {
    const controller = new AbortController();
    const log = buffer.current;
    log.clear();
    setVersion((v) => v + 1);
    setFollowing(true);
    setError(null);
    let timer: ReturnType<typeof setTimeout> | null = null;
    const flush = () => {
      timer = null;
      setVersion((v) => v + 1);
    };
    void (async () => {
      try {
        for await (const text of client.followExecutionLog(executionId, { signal: controller.signal })) {
          log.append(text);
          timer ??= setTimeout(flush, FLUSH_MS);
        }
        if (controller.signal.aborted) return;
        if (timer) clearTimeout(timer);
        flush();
        setFollowing(false);
        onEndedRef.current?.();
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
  }, [client, executionId, attempt]);

  const download = async () => {
    setDownloading(true);
    try {
      const text = await client.getExecutionLog(executionId);
      downloadText(`${executionId}.log`, text);
    } catch (err) {
      // The API could not give it: save what the page has.
      notifications.show({ color: 'yellow', title: 'Saved the log as shown', message: errorMessage(err) });
      downloadText(`${executionId}.log`, buffer.current.text());
    } finally {
      setDownloading(false);
    }
  };

  return (
    <>
      {error ? (
        <Alert color="red" title="The log stream stopped" role="alert" mb="sm">
          <Text size="sm">{errorMessage(error)}</Text>
          <Button size="xs" variant="light" mt="xs" onClick={() => setAttempt((a) => a + 1)}>
            Reconnect
          </Button>
        </Alert>
      ) : null}
      <LogView
        buffer={buffer.current}
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
