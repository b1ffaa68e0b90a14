import { kernelLines } from '../format';

describe('what the side panel says of the kernel', () => {
  it('says that a plain kernel lists its %%rlm runs in their cells, and steps as cells need the RLM Python kernel', () => {
    const lines = kernelLines(false, { name: 'Python 3 (ipykernel)', isRlm: false });
    expect(lines.connection).toBe(
      'Kernel Python 3 (ipykernel): %%rlm runs (after %load_ext rlm_kernel) are listed as they go, each in its cell; steps as cells need the RLM Python kernel (choose it with Kernel › Change Kernel…)'
    );
    expect(lines.connection).not.toContain('not connected');
    expect(lines.empty).toBe(
      'No runs yet. Run %load_ext rlm_kernel, then a %%rlm cell; for each step as a cell, choose the RLM Python kernel with Kernel › Change Kernel….'
    );
  });

  it('without a kernel, on the RLM kernel before it connects, and connected', () => {
    expect(kernelLines(false, null).connection).toMatch(/^No kernel: %%rlm runs .* are listed as they go/);
    expect(kernelLines(false, { name: 'RLM Python', isRlm: true }).connection).toBe(
      'RLM Python kernel, not connected yet (starting, or another version of rlm-kernel)'
    );
    expect(kernelLines(true, { name: 'RLM Python', isRlm: true })).toEqual({
      connection: 'connected to the RLM Python kernel',
      empty: 'No runs yet. Run a %%rlm cell: each root step becomes a cell.'
    });
  });
});
