export function specialFiles(dir: string): Promise<{ paths: Record<string, string>; close(): Promise<void> }>;
