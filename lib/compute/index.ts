// The `compute` namespace: kernels and matrix multiplication on the allocator's buffers,
// graphs, and events.
export { Module, type ModuleLoadOptions } from './module.js';
export { Kernel, type KernelModule, type LaunchConfig, type Dim3 } from './kernel.js';
export { Event, type EventOptions } from '../stream.js';
export { BufferView } from '../device-buffer.js';
export { captureGraph, graphPoolHandle, captureState, CudaGraph, GraphPool, type CaptureMode, type CaptureOptions } from './graph.js';
export { compile, compilerInfo, type CompileOptions, type CompiledProgram } from './compile.js';
export type { ParamType, ScalarType, StructType, ArgOf, ArgsOf } from './signature.js';
export { matmul, gemm, blasInfo, blasWorkspaces, clearBlasWorkspaces, type GemmOptions, type GemmDtype, type GemmCompute, type GemmEpilogue, type BlasWorkspaces } from './blas.js';
export type { BlasInfo, CompilerInfo, KernelAttributes, LaunchLimits } from '../../binding.js';
import { native } from '../native.js';
import { resolveDevice } from '../device.js';
import type { LaunchLimits } from '../../binding.js';

/** What a launch on `device` (default: the current device) may ask for. The cuda backend only. */
export function launchLimits(device?: number): LaunchLimits {
  return native.launchLimits(resolveDevice(device));
}
