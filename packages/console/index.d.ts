/** The folder of the built pages: dist/console (the operator console) and dist/apply (the public application page). */
export declare const consoleDist: string;
