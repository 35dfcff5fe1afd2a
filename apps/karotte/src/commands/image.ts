import { parseArgs } from 'node:util';
import {
  DEFAULT_IMAGE_CACHE_DIR,
  ImageError,
  buildDebianImage,
  importImage,
  listImages,
  pruneImages,
} from '@karotte/core';
import { UsageError } from '../args.js';
import { imageCacheDir } from '../image-cache.js';
import type { Command } from './command.js';
import { EXIT_FAILURE, EXIT_OK, EXIT_USAGE } from '../exit-codes.js';

const HELP = [
  'Usage: karotte image import <layout-dir|archive.tar> [--digest sha256:<hex>] [--cache <dir>] [--json]',
  '       karotte image ls [--cache <dir>] [--json]',
  '       karotte image prune [<digest>...] [--cache <dir>]',
  '       karotte image build-debian <out-dir> [--packages p1,p2] [--suite bookworm]',
  '',
  "A task's own root file system (task.json environment.image). import: check every blob's",
  'digest, unpack the layers once into the root-owned cache (whiteouts handled; links out of',
  'the tree, devices, setuid bits and ".." paths made harmless or refused) and print the',
  "image's digest. ls: the cached images. prune: remove them (all, or the digests named).",
  'build-debian: a small Debian image made here with mmdebstrap, as an OCI image layout.',
  `The cache is ${DEFAULT_IMAGE_CACHE_DIR} unless --cache or KAROTTE_IMAGE_CACHE_DIR names another`,
  '(karotte run and validate use KAROTTE_IMAGE_CACHE_DIR too). Needs root.',
  'Exit 0 when done, 1 when the host cannot (not root, no mmdebstrap), 2 for a bad image or usage.',
].join('\n');

function parse(argv: readonly string[], options: Record<string, { type: 'string' | 'boolean' }>) {
  try {
    return parseArgs({ args: [...argv], options, strict: true, allowPositionals: true });
  } catch (error) {
    throw new UsageError((error as Error).message.replace(/\. To specify a positional argument.*$/su, ''));
  }
}

/** --cache, else KAROTTE_IMAGE_CACHE_DIR, else the default. */
const cacheOf = (flag: unknown): string | undefined => (typeof flag === 'string' ? flag : imageCacheDir());

export const imageCommand: Command = {
  help: HELP,
  async run(argv, { io }) {
    const [sub, ...rest] = argv;
    try {
      switch (sub) {
        case 'import': {
          const { values, positionals } = parse(rest, {
            digest: { type: 'string' },
            cache: { type: 'string' },
            json: { type: 'boolean' },
          });
          if (positionals.length !== 1) throw new UsageError('image import takes one image path');
          const result = await importImage(positionals[0]!, {
            ...(cacheOf(values['cache']) === undefined ? {} : { cacheDir: cacheOf(values['cache'])! }),
            ...(typeof values['digest'] === 'string' ? { expectedDigest: values['digest'] } : {}),
          });
          if (values['json'] === true) {
            io.stdout.write(`${JSON.stringify({ ...result, config: result.config })}\n`);
          } else {
            const r = result.report;
            io.stdout.write(
              `${result.digest}\n` +
                (result.cached
                  ? `already in the cache: ${result.rootfs}\n`
                  : `unpacked ${r.entries} entries (${r.bytes} bytes) into ${result.rootfs} in ${result.durationMs} ms` +
                    (r.skippedSpecial > 0
                      ? `; ${r.skippedSpecial} device node(s) or FIFO(s) not created`
                      : '') +
                    (r.strippedSetid > 0 ? `; setuid/setgid stripped from ${r.strippedSetid}` : '') +
                    '\n'),
            );
          }
          return EXIT_OK;
        }
        case 'ls': {
          const { values, positionals } = parse(rest, {
            cache: { type: 'string' },
            json: { type: 'boolean' },
          });
          if (positionals.length > 0) throw new UsageError('image ls takes no arguments');
          const images = listImages(cacheOf(values['cache']));
          if (values['json'] === true) io.stdout.write(`${JSON.stringify({ images })}\n`);
          else {
            for (const image of images) {
              io.stdout.write(
                `${image.digest}  ${image.format}  ${image.report.bytes} bytes  ${image.source}\n`,
              );
            }
            if (images.length === 0) io.stdout.write('no images in the cache\n');
          }
          return EXIT_OK;
        }
        case 'prune': {
          const { values, positionals } = parse(rest, { cache: { type: 'string' } });
          const removed = pruneImages(
            cacheOf(values['cache']),
            positionals.length === 0 ? undefined : positionals,
          );
          io.stdout.write(`removed ${removed.length} image(s)${removed.map((d) => `\n${d}`).join('')}\n`);
          return EXIT_OK;
        }
        case 'build-debian': {
          const { values, positionals } = parse(rest, {
            packages: { type: 'string' },
            suite: { type: 'string' },
          });
          if (positionals.length !== 1) throw new UsageError('image build-debian takes one output directory');
          const packages =
            typeof values['packages'] === 'string' ? values['packages'].split(',').filter(Boolean) : [];
          const digest = await buildDebianImage({
            out: positionals[0]!,
            packages,
            ...(typeof values['suite'] === 'string' ? { suite: values['suite'] } : {}),
          });
          io.stdout.write(`${digest}\n`);
          return EXIT_OK;
        }
        case undefined:
          throw new UsageError('name a subcommand: import, ls, prune or build-debian');
        default:
          throw new UsageError(`unknown image subcommand ${sub}`);
      }
    } catch (error) {
      if (ImageError.isInstance(error)) {
        io.stderr.write(`karotte image: ${error.code}: ${error.message}\n`);
        return error.kind === 'bad_argument' ? EXIT_USAGE : EXIT_FAILURE;
      }
      // An option the image tool refuses (a malformed --digest): the caller's to fix.
      if ((error as { kind?: unknown }).kind === 'bad_argument' && !(error instanceof UsageError)) {
        io.stderr.write(`karotte image: ${(error as Error).message}\n`);
        return EXIT_USAGE;
      }
      throw error;
    }
  },
};
