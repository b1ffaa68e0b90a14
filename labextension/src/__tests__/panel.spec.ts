import { kernelLines } from '../format';

describe('what the side panel says of the kernel', () => {
  it('says plainly that live runs need the RLM Python kernel in a plain one, and lists saved runs', () => {
    const lines = kernelLines(false, { name: 'Python 3 (ipykernel)', isRlm: false });
    expect(lines.connection).toBe(
      'Kernel Python 3 (ipykernel): live runs need the RLM Python kernel (choose it with Kernel › Change Kernel…); saved runs are listed'
    );
    expect(lines.connection).not.toContain('not connected');
    expect(lines.empty).toBe(
      'No saved runs. Live runs need the RLM Python kernel: choose it with Kernel › Change Kernel…, then run a %%rlm cell.'
    );
  });

  it('without a kernel, on the RLM kernel before it connects, and connected', () => {
    expect(kernelLines(false, null).connection).toMatch(/^No kernel: live runs need the RLM Python kernel/);
    expect(kernelLines(false, { name: 'RLM Python', isRlm: true }).connection).toBe(
      'RLM Python kernel, not connected yet (starting, or another version of rlm-kernel)'
    );
    expect(kernelLines(true, { name: 'RLM Python', isRlm: true })).toEqual({
      connection: 'connected to the RLM Python kernel',
      empty: 'No runs yet. Run a %%rlm cell: each root step becomes a cell.'
    });
  });
});
